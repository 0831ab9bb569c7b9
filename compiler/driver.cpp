#include "driver.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <locale>
#include <shared_mutex>
#include <system_error>

#include <fmt/format.h>
#include <sstream>
#include <thread>

#include "base/background.h"
#include "base/sha256.h"
#include "checks/checks.h"
#include "emit/emitter.h"
#include "emit/runs.h"
#include "emit/verify_objects.h"
#include "frontend/jsonnet_loader.h"
#include "frontend/limits.h"
#include "frontend/schema_check.h"
#include "frontend/spec_detect.h"
#include "frontend/yaml_loader.h"
#include "io/tree_writer.h"
#include "io/work_tree.h"
#include "model/catalog.h"
#include "model/lower.h"
#include "model/pricing.h"

namespace fs = std::filesystem;

namespace trainc {

SourcePtr read_source(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read spec '" + path + "': no such file or not readable";
    return nullptr;
  }
  // Read at most one byte past the limit, so that neither a huge file nor a device is read whole;
  // in pieces, so that a small spec does not cost a buffer of the limit's size.
  std::string text;
  char buf[1 << 16];
  while (text.size() <= limits::kSpecBytes) {
    const size_t want = std::min(sizeof buf, limits::kSpecBytes + 1 - text.size());
    in.read(buf, static_cast<std::streamsize>(want));
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (static_cast<size_t>(in.gcount()) < want) break;
  }
  if (text.size() > limits::kSpecBytes) {
    error = fmt::format("spec '{}' is larger than {} KiB; trainc reads specs up to that size", path,
                        limits::kSpecBytes >> 10);
    return nullptr;
  }
  if (in.bad()) {
    error = "cannot read spec '" + path + "'";
    return nullptr;
  }
  return std::make_shared<SourceFile>(path, std::move(text));
}

bool is_jsonnet(const std::string& name) {
  return name.ends_with(".jsonnet") || name.ends_with(".libsonnet");
}

Origin make_origin(const std::string& spec, const std::string& out_dir) {
  if (out_dir.empty()) {
    const fs::path root = git_work_tree(spec).value_or(fs::absolute(spec).parent_path());
    return Origin{relative_to(spec, root), "out", ""};
  }
  const RecordRoot root = record_root(spec, out_dir);
  Origin o{relative_to(spec, root.dir), relative_to(out_dir, root.dir), root.outside_repository};
  const fs::path inside = fs::path(o.spec).parent_path().lexically_relative(fs::path(o.out));
  o.spec_in_output = !inside.empty() && *inside.begin() != "..";
  return o;
}

WarmUp::WarmUp() {
  if (std::thread::hardware_concurrency() < 2) return;
  start_background([] {
    // A load that throws here leaves its static unset; the compile that needs it throws again, and
    // reports it.
    try {
      load_spec_schema();
      catalog();
      price_book();
    } catch (...) {
    }
  });
}

WarmUp::~WarmUp() { wait_background(); }

std::optional<System> lower_whole(const SourcePtr& source, Diagnostics& diags) {
  diags.add_source(source);
  auto doc = is_jsonnet(source->name()) ? load_jsonnet(source, diags) : load_yaml(source, diags);
  if (!doc || check_schema(*doc, diags) == SchemaVerdict::invalid) return std::nullopt;
  const size_t before = diags.reported().size();
  auto system = lower_for_checks(*doc, diags, check_lowered);
  if (!system || diags.has_errors_since(before)) return std::nullopt;
  bool whole = false;
  run_checks(*system, *doc, diags, {}, &whole);
  if (!whole) return std::nullopt;
  return system;
}

std::optional<Compiled> compile_source(const SourcePtr& source, Diagnostics& diags, const Origin& origin,
                                       const CheckOptions& checks) {
  diags.add_source(source);
  auto doc = is_jsonnet(source->name()) ? load_jsonnet(source, diags) : load_yaml(source, diags);
  if (!doc) return std::nullopt;
  // Every phase runs on what the one before it left valid, so independent mistakes are reported
  // together: schema errors prune the entities holding them, lowering errors leave out the
  // entities they were found in (and whatever refers to those) from the checks.
  const size_t before = diags.reported().size();
  // The spec's and the output's paths reach generated files (Dockerfile comments, pipelines): none
  // may break a line there or open a GitHub expression.
  for (const auto& [what, path] : {std::pair{"the spec's path", origin.spec}, {"the output folder's path", origin.out}})
    if (std::any_of(path.begin(), path.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }) ||
        path.find("${{") != std::string::npos)
      diags.report({Severity::error, source->name(), {}, "",
                    fmt::format("{} '{}' holds a control character or '${{{{': generated files name it (in Dockerfile "
                                "comments and CI pipelines); rename the folder",
                                what, path),
                    {}});
  // Scripts find the spec at the place the output records; inside the output root, a folder
  // there that `trainc diff` cannot tell from output could stand in for it.
  if (origin.spec_in_output)
    diags.report({Severity::error, source->name(), {}, "",
                  fmt::format("the spec's folder is inside the output folder '{}' (the spec is '{}'): compiled output "
                              "must not hold its own sources, and `trainc diff` reports every file there it did not "
                              "generate; compile into a folder beside the spec's, e.g. '-o out' at the repository's "
                              "root",
                              origin.out, origin.spec),
                  {}});
  if (check_schema(*doc, diags) == SchemaVerdict::invalid) return std::nullopt;
  auto system = lower_for_checks(*doc, diags, check_lowered);
  if (system) run_checks(*system, *doc, diags, checks);
  if (!system || diags.has_errors_since(before)) return std::nullopt;
  Compiled out{std::move(*system), {}};
  out.system.origin = origin;
  out.system.origin.spec_sha256 = sha256_hex(source->text());
  if (out.system.ci && !origin.outside_repository.empty())
    diags.report({Severity::warning, source->name(), doc->loc("/ci", Anchor::key), "/ci",
                  fmt::format("the CI pipelines are not written: they name the spec and the output folder as paths "
                              "in one repository, but {}; compile into a folder of the spec's git work tree "
                              "(e.g. '-o out' at its root) to get them",
                              origin.outside_repository),
                  {}});
  name_runs(out.system);  // each step's run, named by what it runs
  const Planned plan(out.system, k8s::plan(out.system));  // once: every emitter reads it
  for (const auto& emitter : emitters()) emitter->emit(out.system, plan, out.files);
  // Verify before writing: an object the API server would reject is a bug (InvalidObjectError).
  check_objects(out.files);
  add_manifest(out.files, origin.spec);
  return out;
}

namespace {

void run_job(SpecJob& job, const CheckOptions& checks, bool skip_non_specs) {
  try {
    if (skip_non_specs) {
      if (auto why = non_spec_reason(job.source)) {
        job.skipped = std::move(*why);
        return;
      }
    }
    job.compiled = compile_source(job.source, job.diags, job.origin, checks);
  } catch (...) {
    job.error = std::current_exception();
  }
}

}  // namespace

void compile_many(std::vector<SpecJob>& jobs, const CheckOptions& checks, bool skip_non_specs) {
  std::vector<size_t> jsonnet, yaml;
  for (size_t i = 0; i < jobs.size(); ++i) (is_jsonnet(jobs[i].source->name()) ? jsonnet : yaml).push_back(i);
  std::atomic<size_t> next{0};
  auto run_next_yaml = [&] {
    const size_t k = next.fetch_add(1);
    if (k >= yaml.size()) return false;
    run_job(jobs[yaml[k]], checks, skip_non_specs);
    return true;
  };
  // Workers for the YAML specs this thread does not get to at once: it takes the Jsonnet specs
  // first, then YAML specs with the workers.
  const size_t cores = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
  const size_t waiting = jsonnet.empty() && !yaml.empty() ? yaml.size() - 1 : yaml.size();
  const size_t wanted = std::min(cores - 1, waiting);
  std::vector<std::thread> workers;
  if (wanted > 0) {
    // std::regex narrows characters through the global locale's ctype<char>, which caches each
    // character's answer on first use: a write of the same byte by any thread, harmless, but a data
    // race all the same (ThreadSanitizer reports it). Filled here, before the workers start.
    const auto& ctype = std::use_facet<std::ctype<char>>(std::locale());
    for (int c = 0; c < 256; ++c) (void)ctype.narrow(static_cast<char>(c), '\0');
  }
  for (size_t w = 0; w < wanted; ++w) {
    try {
      workers.emplace_back([&] {
        for (;;) {
          std::shared_lock gate(fork_gate());
          if (!run_next_yaml()) return;
        }
      });
    } catch (const std::system_error&) {
      break;  // no thread to be had: fewer workers
    }
  }
  for (size_t i : jsonnet) run_job(jobs[i], checks, skip_non_specs);
  while (run_next_yaml()) {
  }
  for (auto& t : workers) t.join();
}

}  // namespace trainc
