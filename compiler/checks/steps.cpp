#include <fmt/format.h>

#include "base/data_path.h"
#include "checks/checks.h"

namespace trainc {
namespace {

/// Whether `inner` is `outer` or below it (both absolute, normalised).
bool path_within(const std::string& inner, const std::string& outer) {
  return inner == outer || outer == "/" || inner.starts_with(outer + "/");
}

/// Names the entry script or the Job set for the trainer; a spec that sets them breaks rendezvous.
const std::vector<std::string>& reserved_env(const Step& step) {
  static const std::vector<std::string> single{"PYTHONUNBUFFERED", "TRAINC_RESUME_FROM"};
  static const std::vector<std::string> multi{"PYTHONUNBUFFERED", "TRAINC_RESUME_FROM", "NNODES", "NODE_RANK",
                                              "MASTER_ADDR", "MASTER_PORT"};
  return step.distributed() ? multi : single;
}

}  // namespace

void check_steps(const System& sys, const Document& doc, Diagnostics& diags) {
  if (sys.steps.empty() && !sys.gcp)
    doc.error(diags, doc.root.contains("pipeline") ? "/pipeline" : "",
              "the spec has no steps and no 'gcp' infrastructure, so there is nothing to generate; add a step to "
              "'pipeline' or a 'gcp' section");
  for (const auto& step : sys.steps) {
    const bool has_cmd = doc.root.contains(nlohmann::json::json_pointer(ptr_key(step.ptr, "command")));
    if (step.torchrun && has_cmd) {
      doc.error(diags, ptr_key(step.ptr, "command"),
                fmt::format("step '{}' sets both 'torchrun' and 'command'; keep one", step.name), Anchor::key,
                {doc.note(ptr_key(step.ptr, "torchrun"), "'torchrun' is set here", Anchor::key)});
    } else if (!step.torchrun && !has_cmd) {
      doc.error(diags, step.ptr,
                fmt::format("step '{}' says nothing to run; add 'torchrun: {{script: ...}}' or 'command: [...]'",
                            step.name));
    } else if (has_cmd && step.command.empty()) {
      doc.error(diags, ptr_key(step.ptr, "command"), "'command' is empty; name the program to run");
    }
    if (step.distributed() && !step.torchrun) {
      doc.error(diags, ptr_key(step.ptr, "nodes"),
                fmt::format("step '{}' runs on {} nodes but has no 'torchrun' to coordinate them; multi-node "
                            "steps use torchrun",
                            step.name, step.nodes));
    }
    const Mount* ckpt_mount = nullptr;
    if (step.checkpoints)
      for (const auto& m : step.mounts)
        if (!m.read_only && path_within(step.checkpoints->path, m.path)) ckpt_mount = &m;
    if (step.checkpoints && !step.outputs && !ckpt_mount) {
      doc.error(diags, step.checkpoints->ptr,
                "'checkpoints' needs 'outputs' (an S3 store synced in and out) or a writable GCS mount that holds "
                "its path",
                Anchor::key);
    } else if (step.checkpoints && !ckpt_mount && !path_within(step.checkpoints->path, step.outputs->path)) {
      doc.error(diags, ptr_key(step.checkpoints->ptr, "path"),
                fmt::format("checkpoints path '{}' is outside outputs path '{}', so checkpoints would never be "
                            "saved; put them under '{}'",
                            step.checkpoints->path, step.outputs->path, step.outputs->path),
                Anchor::value, {doc.note(ptr_key(step.outputs->ptr, "path"), "outputs path set here")});
    }
    if (!step.mounts.empty() && sys.pod_service_account().empty())
      doc.error(diags, ptr_key(step.ptr, "mounts"),
                "GCS mounts need an identity the bucket trusts: add 'identity' (a service account bound with "
                "Workload Identity) or 'serviceAccount'",
                Anchor::key);
    for (size_t i = 0; i < step.mounts.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (step.mounts[i].path == step.mounts[j].path)
          doc.error(diags, ptr_key(step.mounts[i].ptr, "path"),
                    fmt::format("two mounts at '{}'; each mount needs its own path", step.mounts[i].path), Anchor::value,
                    {doc.note(ptr_key(step.mounts[j].ptr, "path"), "first mounted here")});
    for (const auto& name : reserved_env(step)) {
      if (step.env.count(name))
        doc.error(diags, ptr_key(ptr_key(step.ptr, "env"), name),
                  fmt::format("env '{}' is set by trainc for this step; remove it", name), Anchor::key);
    }
  }
}

}  // namespace trainc
