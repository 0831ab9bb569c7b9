// A step's own settings: the pod paths it writes to or mounts over stay out of the container's
// system, its size fits where it runs, and its kind's settings are complete.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/data_path.h"
#include "base/overloaded.h"
#include "base/units.h"
#include "checks/checks.h"
#include "model/failure.h"

namespace trainc {
namespace {

/// Folders of the container's own system that no step may sync into, write outputs or
/// checkpoints to, or mount a bucket over.
constexpr std::string_view kSystemFolders[] = {"/bin",  "/boot", "/dev", "/etc", "/lib", "/lib32",   "/lib64",  "/proc",
                                               "/root", "/run",  "/sbin", "/sys", "/usr", "/var/lib", "/var/run"};

/// Reports the pod path written at `ptr` (which lowering resolved against `workdir` into `resolved`)
/// when it climbs out of the workdir or is a system folder.
void confine(const std::string& workdir, const std::string& ptr, const std::string& resolved, const Document& doc,
             Diagnostics& diags) {
  const nlohmann::json* value = written(doc, ptr);
  if (!value || !value->is_string()) return;
  const std::string text = value->get<std::string>();
  if (!text.starts_with("/")) {
    const std::string rel = std::filesystem::path(text).lexically_normal().generic_string();
    if (rel == ".." || rel.starts_with("../")) {
      doc.error(diags, ptr,
                fmt::format("'{}' climbs out of the step's workdir {}; write a path inside it, or an absolute path",
                            text, workdir));
      return;
    }
  }
  if (resolved == "/") {
    doc.error(diags, ptr, "'/' is the container's root; name a folder of the workload's own, such as /workspace/data");
    return;
  }
  for (std::string_view sys : kSystemFolders)
    if (resolved == sys || resolved.starts_with(std::string(sys) + "/")) {
      doc.error(diags, ptr,
                fmt::format("'{}' is {}the system folder {}; name a folder of the workload's own, such as "
                            "/workspace/data",
                            text, resolved == sys ? "" : "inside ", sys));
      return;
    }
}

void confine_mounts(const std::vector<Mount>& mounts, const Document& doc, Diagnostics& diags) {
  for (const auto& m : mounts) confine("/", ptr_key(m.ptr, "path"), m.path, doc, diags);
}

/// Where the step writes: its heartbeat file, inputs, mounts, outputs and checkpoints.
void check_paths(const Step& st, const Document& doc, Diagnostics& diags) {
  confine(st.workdir, ptr_key(ptr_key(st.ptr, "heartbeat"), "file"), st.heartbeat.file, doc, diags);
  for (const auto& in : st.inputs) confine(st.workdir, ptr_key(in.ptr, "to"), in.to, doc, diags);
  confine_mounts(st.mounts, doc, diags);
  if (st.outputs) confine(st.workdir, ptr_key(st.outputs->ptr, "path"), st.outputs->path, doc, diags);
  if (st.checkpoints) confine(st.workdir, ptr_key(st.checkpoints->ptr, "path"), st.checkpoints->path, doc, diags);
}

/// How many pods the step runs: one on a compute cluster, TPU slices only on a TPU pool.
void check_size(const System& sys, const Step& st, const Document& doc, Diagnostics& diags) {
  const nlohmann::json* nodes = written(doc, ptr_key(st.ptr, "nodes"));
  if (!st.cluster.empty() && nodes && nodes->is_number() && nodes->get<double>() > 1)
    doc.error(diags, ptr_key(st.ptr, "nodes"),
              fmt::format("step '{}' runs on cluster '{}', which spreads its work; the step itself is one pod: "
                          "remove 'nodes' (grow the cluster's workers instead)",
                          st.name, st.cluster),
              Anchor::value, {doc.note(ptr_key(st.ptr, "cluster"), "the cluster is named here")});
  const Pool* pool = st.pool.empty() ? nullptr : sys.pool(st.pool);
  if (written(doc, ptr_key(st.ptr, "slices")) && !(pool && pool->tpu))
    doc.error(diags, ptr_key(st.ptr, "slices"),
              pool ? fmt::format("'slices' is for steps on TPU pools; pool '{}' ({}) has no TPU slices: remove it",
                                 pool->name, pool->machine)
                   : std::string("'slices' is for steps on TPU pools: set 'pool' to a TPU pool or remove it"),
              Anchor::key);
}

void check_kind_settings(const Step& st, const Document& doc, Diagnostics& diags) {
  const auto kptr = [&](std::string_view key) { return ptr_key(st.ptr, std::string(key)); };
  match(
      st.run, [](const Torchrun&) {},
      [&](const Command& c) {
        // A step that names no kind is lowered as an empty command, and reported as such there.
        if (c.argv.empty() && written(doc, kptr(Command::kName)))
          doc.error(diags, kptr(Command::kName), "'command' is empty; name the program to run");
      },
      [&](const Datagen& d) {
        const std::string ptr = kptr(Datagen::kName);
        if ((written(doc, ptr_key(ptr, "rows")) != nullptr) == (written(doc, ptr_key(ptr, "size")) != nullptr))
          doc.error(diags, ptr, "datagen needs exactly one of 'rows' and 'size'", Anchor::key);
        if (d.size.empty()) return;
        if (const auto bytes = parse_byte_size(d.size); bytes && d.rows < 1)
          doc.error(diags, ptr_key(ptr, "size"),
                    fmt::format("{} holds less than one row of {} float32 features and a label", d.size, d.features));
      },
      [](const XGBoost&) {});
}

/// A failed sync with storage exits kSyncFailedExit, for a retry to try again: a step that syncs
/// cannot list it among the codes that fail it at once.
void check_no_retry_codes(const Step& st, const Document& doc, Diagnostics& diags) {
  if (st.inputs.empty() && !st.outputs) return;
  const std::string ptr = ptr_key(st.ptr, "noRetryExitCodes");
  const nlohmann::json* codes = written(doc, ptr);
  if (!codes || !codes->is_array()) return;
  for (size_t i = 0; i < codes->size(); ++i)
    if ((*codes)[i] == kSyncFailedExit)
      doc.error(diags, ptr_index(ptr, i),
                fmt::format("exit code {} is the entry script's when a sync with S3 fails (the store's or the "
                            "network's trouble, which a retry may fix), so it cannot fail step '{}' at once; "
                            "remove it (a trainer that exits {} itself is retried like any failure)",
                            kSyncFailedExit, st.name, kSyncFailedExit));
}

/// Each step's name is its own, and no step needs itself; reported in spec order, the first use
/// of a name noted.
void check_own_names(const System& sys, const Document& doc, Diagnostics& diags) {
  std::vector<const Step*> steps;
  for (const auto& st : sys.steps) steps.push_back(&st);
  const auto index = [](const Step* st) { return std::stoul(st->ptr.substr(st->ptr.rfind('/') + 1)); };
  std::sort(steps.begin(), steps.end(), [&](const Step* a, const Step* b) { return index(a) < index(b); });
  std::map<std::string, const Step*> seen;
  for (const Step* st : steps) {
    auto [it, fresh] = seen.emplace(st->name, st);
    if (!fresh)
      doc.error(diags, ptr_key(st->ptr, "name"),
                fmt::format("duplicate step name '{}'; step names must be unique", st->name), Anchor::value,
                {doc.note(ptr_key(it->second->ptr, "name"), "first used here")});
    for (size_t i = 0; i < st->needs.size(); ++i)
      if (st->needs[i] == st->name)
        doc.error(diags, ptr_index(ptr_key(st->ptr, "needs"), i), fmt::format("step '{}' cannot need itself", st->name));
  }
}

}  // namespace

void check_step_settings(const System& sys, const Document& doc, Diagnostics& diags) {
  check_own_names(sys, doc, diags);
  for (const auto& [name, c] : sys.clusters) confine_mounts(c.mounts, doc, diags);
  for (const auto& st : sys.steps) {
    check_paths(st, doc, diags);
    check_size(sys, st, doc, diags);
    check_kind_settings(st, doc, diags);
    check_no_retry_codes(st, doc, diags);
  }
}

}  // namespace trainc
