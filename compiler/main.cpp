// trainc: compile training-system specs into Kubernetes manifests and a runbook.
// Exit codes: 0 ok, 1 spec errors or drift, 2 usage or I/O errors (and internal errors, which are bugs).
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <tuple>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>
#include <map>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "completion.h"
#include "driver.h"
#include "inspect/against.h"
#include "kubectl_cluster.h"
#include "k8s/queue.h"
#include "inspect/explain.h"
#include "model/images.h"
#include "inspect/graph.h"
#include "inspect/plan.h"
#include "frontend/jsonnet_loader.h"
#include "frontend/schema_check.h"
#include "frontend/spec_detect.h"
#include "io/drift_summary.h"
#include "io/untrusted_folder.h"
#include "io/tree_writer.h"
#include "io/work_tree.h"
#include "run/local_runner.h"

namespace {

using namespace trainc;
namespace fs = std::filesystem;

constexpr int kOk = 0, kSpecError = 1, kUsage = 2;

/// What the CLI is doing now ("compiling 'spec.yaml'"), so an internal error can say where it happened.
std::string g_activity = "reading the command line";

struct Options {
  std::vector<std::string> specs;
  std::string spec;
  bool local = false;
  double scale = 1.0;
  int threads = 0;
  std::string workdir, trainrt, tracker;
  std::string python, s3rver;            // run --local: torch's python, the S3 server's script
  std::vector<std::string> seeds;        // run --local: STORE[:/PATH]=FOLDER
  std::vector<std::string> kills, preempts;  // run --local: [STEP:]RANK@SECONDS
  std::string chaos;                         // run --local: --chaos SEED
  double chaos_within = 60;
  bool serve = false;
  int max_ranks = 0;
  std::string out_dir = "out";
  std::string against;
  std::string diagnostics = "text";
  std::vector<std::string> allow_secret_like;  ///< --allow-secret-like
  bool skip_non_specs = false;  ///< files that are not trainc specs get a note instead of an error
  bool all = false;             ///< diff: also every output folder whose recorded spec exists
  bool stat = false;            ///< diff: the summary only, no unified diff
  bool live = false, read_only = false;  ///< diff --live: against the kubectl context's cluster; --read-only
  std::string context, kubeconfig;  ///< diff --live: kubectl's --context and --kubeconfig
  std::string format = "text";  ///< plan: text or json
  std::string graph_out;        ///< graph: FILE.svg or FILE.dot ("" = DOT on stdout)
  std::string field;            ///< explain: the field path
  bool recursive = false;       ///< explain: the whole subtree
  bool list = false, markdown = false;            ///< explain: every field path; the markdown reference
  std::string image;            ///< explain --image: an image reference
  bool image_given = false;     ///< explain --image was given (an empty reference is an error)
  std::string explain_format = "text";             ///< explain --image: text or json
  std::string shell;            ///< completion: bash or zsh
};

void print_diagnostics(const Options& opt, const Diagnostics& diags) {
  g_activity = "printing diagnostics";
  const std::string text = opt.diagnostics == "json"     ? diags.render_json()
                           : opt.diagnostics == "github" ? diags.render_github()
                                                         : diags.render_text();
  std::fputs(text.c_str(), stderr);
}

/// Compiles every spec; all diagnostics are printed together. Empty result on any error. `out_dir`
/// is the output folder the command names ("" for none), for System::origin; `compiled` gets the
/// spec of each result (with --skip-non-specs, not every spec given compiles to a result).
int compile_all(const Options& opt, const std::string& out_dir, std::vector<Compiled>& results,
                std::vector<std::string>& compiled_specs) {
  Diagnostics diags;
  std::map<std::string, std::string> seen;  // system name -> spec
  std::vector<SpecJob> jobs;
  for (const auto& spec : opt.specs) {
    g_activity = fmt::format("reading '{}'", spec);
    std::string io_error;
    SourcePtr src = read_source(spec, io_error);
    if (!src) {
      fmt::print(stderr, "trainc: error: {}\n", io_error);
      return kUsage;
    }
    jobs.push_back({std::move(src), make_origin(spec, out_dir), {}, {}, {}, {}});
  }
  // The Jsonnet specs start evaluating now, in child processes side by side, while the YAML specs
  // compile (compile_many).
  std::vector<SourcePtr> jsonnet;
  for (const auto& job : jobs)
    if (is_jsonnet(job.source->name())) jsonnet.push_back(job.source);
  if (!jsonnet.empty()) expect_jsonnet(jsonnet);
  const WarmUp warm_up;
  g_activity = opt.specs.size() == 1 ? fmt::format("compiling '{}'", opt.specs[0]) : "compiling the specs";
  const CheckOptions checks{{opt.allow_secret_like.begin(), opt.allow_secret_like.end()}};
  compile_many(jobs, checks, opt.skip_non_specs);
  for (size_t i = 0; i < jobs.size(); ++i) {
    SpecJob& job = jobs[i];
    const std::string& spec = opt.specs[i];
    if (job.error) {
      g_activity = fmt::format("compiling '{}'", spec);
      std::rethrow_exception(job.error);
    }
    if (job.skipped) {
      fmt::print(stderr, "trainc: note: skipping '{}': not a trainc spec ({})\n", spec, *job.skipped);
      continue;
    }
    diags.append(job.diags);
    if (auto& compiled = job.compiled) {
      // Two specs of one name would write one folder; `check` writes none, so it lets them be.
      auto [it, fresh] = seen.emplace(compiled->system.name, spec);
      if (!fresh && !out_dir.empty()) {
        diags.report({Severity::error, spec, {}, "/name",
                      fmt::format("system '{}' is also defined by '{}'; each spec compiles to its own folder, so names "
                                  "must differ",
                                  compiled->system.name, it->second),
                      {}});
        continue;
      }
      results.push_back(std::move(*compiled));
      compiled_specs.push_back(spec);
    }
  }
  if (diags.has_errors()) {
    print_diagnostics(opt, diags);
    results.clear();
    compiled_specs.clear();
    return kSpecError;
  }
  if (!diags.reported().empty()) print_diagnostics(opt, diags);  // warnings
  return kOk;
}

int cmd_compile(const Options& opt) {
  std::vector<Compiled> results;
  std::vector<std::string> specs;
  if (int rc = compile_all(opt, opt.out_dir, results, specs)) return rc;
  // Ownership is checked for every folder before any is replaced.
  for (const auto& r : results) {
    g_activity = fmt::format("writing '{}'", (fs::path(opt.out_dir) / r.system.name).generic_string());
    if (auto err = write_tree(opt.out_dir, r.system.name, r.files)) {
      fmt::print(stderr, "trainc: error: {}\n", *err);
      return kUsage;
    }
    size_t k8s = r.files.under("k8s/").size();
    fmt::print("wrote {}/ ({} files: {} in k8s/, README.md, model.yaml)\n",
               (fs::path(opt.out_dir) / r.system.name).generic_string(), r.files.files().size(), k8s);
  }
  return kOk;
}

int cmd_check(const Options& opt) {
  std::vector<Compiled> results;
  std::vector<std::string> specs;
  if (int rc = compile_all(opt, "", results, specs)) return rc;
  for (size_t i = 0; i < results.size(); ++i)
    fmt::print("{}: ok (system '{}', {} step(s))\n", specs[i], results[i].system.name, results[i].system.steps.size());
  return kOk;
}

/// With --skip-non-specs, a file inside one of the output folders (a hand-edited manifest, say)
/// stands for the spec that folder records, so that editing the output alone is caught too. Specs
/// are de-duplicated.
std::vector<std::string> specs_to_compare(const Options& opt) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& spec) {
    if (seen.insert(relative_to(spec, "/")).second) out.push_back(spec);
  };
  for (const auto& spec : opt.specs) {
    std::string rel = relative_to(spec, opt.against);
    fs::path inside(rel);
    if (!opt.skip_non_specs || rel.starts_with("..") || std::distance(inside.begin(), inside.end()) < 2) {
      add(spec);
      continue;
    }
    const std::string folder = inside.begin()->string();
    std::string source;
    for (const auto& f : output_folders(opt.against))
      if (f.name == folder) source = f.source;
    const auto recorded = find_recorded_spec(opt.against, source);
    if (!recorded) {
      add(spec);  // not trainc's output, or an orphan (reported by the scan): judged as a file
      continue;
    }
    add(relative_to(*recorded, fs::current_path()));
  }
  // --all: every folder trainc made in DIR is compared with its recorded spec, so that a change
  // no spec file shows (an edited script, a build context's file, an imported library) is caught.
  if (opt.all) {
    for (const auto& f : output_folders(opt.against))
      if (const auto recorded = find_recorded_spec(opt.against, f.source))
        add(relative_to(*recorded, fs::current_path()));
  }
  return out;
}

int cmd_diff_live(const Options& opt);

int cmd_diff(const Options& opt) {
  if (opt.live) return cmd_diff_live(opt);
  if (opt.against.empty()) {
    fmt::print(stderr, "trainc: error: diff needs --against DIR (the output folder), or --live (the cluster)\n");
    return kUsage;
  }
  Options given = opt;
  given.specs = specs_to_compare(opt);
  std::vector<Compiled> results;
  std::vector<std::string> specs;
  if (int rc = compile_all(given, opt.against, results, specs)) return rc;
  const bool github = opt.diagnostics == "github";
  std::string summaries, diffs, commands;
  std::vector<std::string> drifted;
  std::map<std::string, std::string> compiled;  // spec as recorded -> folder name
  bool failed = false;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    compiled.emplace(r.system.origin.spec, r.system.name);
    const std::string folder = (fs::path(opt.against) / r.system.name).generic_string();
    g_activity = fmt::format("comparing '{}' with '{}'", r.system.name, folder);
    std::string error;
    std::vector<FileDrift> drift = compare_tree(opt.against, r.system.name, r.files, error);
    if (!error.empty()) {
      fmt::print(stderr, "trainc: {}\n", printable(error));
      if (github) commands += github_command("error", folder, 0, 0, "trainc", error);
      drifted.push_back(specs[i]);
      failed = true;
      continue;
    }
    if (drift.empty()) continue;
    failed = true;
    drifted.push_back(specs[i]);
    summaries += folder + ":\n";
    for (const auto& line : summarize_drift(drift)) summaries += "  " + line + "\n";
    if (!opt.stat) diffs += unified_diff(opt.against, r.system.name, drift);
    if (github)
      for (const auto& d : drift)
        commands += github_command(
            "error", (fs::path(folder) / d.path).generic_string(), 0, 0, "trainc",
            fmt::format("{} differs from what {} compiles to; run 'trainc compile {} -o {}'",
                        (fs::path(folder) / d.path).generic_string(), specs[i], specs[i], opt.against));
  }
  // Folders trainc made whose spec is gone (pre-commit does not pass deleted files) or now compiles
  // to another folder.
  g_activity = fmt::format("looking for orphaned folders in '{}'", opt.against);
  std::vector<std::string> orphans;
  for (const auto& f : output_folders(opt.against)) {
    if (f.source.empty()) continue;  // written before trainc recorded sources
    const std::string folder = (fs::path(opt.against) / f.name).generic_string();
    std::string why;
    auto it = compiled.find(f.source);
    if (it != compiled.end() && it->second != f.name)
      why = fmt::format("its spec '{}' now compiles to '{}'; delete the folder", f.source,
                        (fs::path(opt.against) / it->second).generic_string());
    else if (it == compiled.end() && !find_recorded_spec(opt.against, f.source))
      why = fmt::format("its spec '{}' no longer exists; delete the folder or restore the spec", f.source);
    if (why.empty()) continue;
    std::string message = fmt::format("'{}' is orphaned: {}", folder, why);
    orphans.push_back("trainc: " + message);
    if (github)
      commands += github_command("error", (fs::path(folder) / kManifestName).generic_string(), 0, 0, "trainc", message);
    failed = true;
  }
  // Whatever else lies under DIR: scripts never search it, but a reviewer could take it for output.
  g_activity = fmt::format("looking for files trainc did not generate in '{}'", opt.against);
  std::set<std::string> compared_folders;
  for (const auto& [_, name] : compiled) compared_folders.insert(name);
  for (const auto& u : unknown_entries(opt.against, compared_folders)) {
    const std::string path = (fs::path(opt.against) / u.path).generic_string();
    std::string message =
        u.first.empty() && u.files == 0 ? fmt::format("'{}' is not trainc's output; remove it", path)
        : u.first.empty()               ? fmt::format("'{}' is not trainc's output (trainc did not generate it); remove it", path)
                                        : fmt::format("'{}' is not trainc's output: it holds '{}'{}; remove it", path,
                                                      (fs::path(opt.against) / u.first).generic_string(),
                                                      u.files > 1 ? fmt::format(" and {} more file(s)", u.files - 1) : "");
    orphans.push_back("trainc: " + message);
    if (github) commands += github_command("error", path, 0, 0, "trainc", message);
    failed = true;
  }
  // The committed folder is a pull request's to write: no terminal escapes reach the screen.
  std::fputs(printable(summaries).c_str(), stdout);
  if (!summaries.empty() && !diffs.empty()) std::fputs("\n", stdout);
  std::fputs(printable(diffs).c_str(), stdout);
  std::fflush(stdout);
  std::fputs(printable(commands).c_str(), stderr);
  for (const auto& o : orphans) fmt::print(stderr, "{}\n", printable(o));
  if (!drifted.empty())
    fmt::print(stderr, "trainc: '{}' differs from what the spec compiles to; run 'trainc compile {} -o {}'\n",
               opt.against, fmt::join(drifted, " "), opt.against);
  return failed ? kSpecError : kOk;
}

/// Compiles the one spec of plan and graph; nullopt (with the exit code in `rc`) on errors.
std::optional<Compiled> compile_one(const Options& opt, int& rc) {
  Options one = opt;
  one.specs = {opt.spec};
  std::vector<Compiled> results;
  std::vector<std::string> specs;
  rc = compile_all(one, "", results, specs);
  if (rc != kOk) return std::nullopt;
  return std::move(results[0]);
}

/// `diff --live SPEC`: the spec's output against the cluster (inspect/live.h).
int cmd_diff_live(const Options& opt) {
  if (opt.specs.size() != 1) {
    fmt::print(stderr, "trainc: error: diff --live compares one spec with the cluster ({} given)\n", opt.specs.size());
    return kUsage;
  }
  Options one = opt;
  one.spec = opt.specs[0];
  // An output folder (what apply.sh --diff gives): the spec it records, compiled, must be that folder.
  std::error_code ec;
  std::string out_root;
  if (fs::is_directory(one.spec, ec)) {
    const fs::path dir = fs::absolute(one.spec).lexically_normal();
    const fs::path folder = dir.filename().empty() ? dir.parent_path() : dir;
    out_root = folder.parent_path().string();
    std::string source;
    for (const auto& f : output_folders(out_root))
      if (f.name == folder.filename().string()) source = f.source;
    const auto spec = find_recorded_spec(out_root, source);
    if (!spec) {
      fmt::print(stderr, "trainc: error: '{}' is not an output folder whose recorded spec exists ({}); give the spec: "
                         "trainc diff --live SPEC\n",
                 printable(opt.specs[0]), source.empty() ? "it records none" : "it records '" + printable(source) + "'");
      return kUsage;
    }
    one.spec = spec->string();
  }
  int rc = kOk;
  std::optional<Compiled> c;
  {
    Options single = one;
    single.specs = {one.spec};
    std::vector<Compiled> results;
    std::vector<std::string> specs;
    rc = compile_all(single, out_root, results, specs);
    if (rc != kOk) return rc;
    c = std::move(results[0]);
  }
  if (!out_root.empty()) {
    std::string error;
    const auto differs = compare_tree(out_root, c->system.name, c->files, error);
    if (!error.empty() || !differs.empty()) {
      fmt::print(stderr, "trainc: error: '{}' is not what {} compiles to{}: run 'trainc compile {} -o {}' first (what "
                         "applying it does is what its files say, and those are compared with the spec's)\n",
                 printable(opt.specs[0]), one.spec, error.empty() ? "" : " (" + printable(error) + ")", one.spec,
                 out_root);
      return kUsage;
    }
  }
  g_activity = "asking the cluster";
  const KubectlTarget target{"kubectl", opt.context, opt.kubeconfig};
  return diff_live_and_print(c->system, c->files.files(), target, opt.format, opt.read_only);
}

void print_plan(const Options& opt, const System& sys, const AgainstPlan* against = nullptr) {
  g_activity = fmt::format("planning '{}'", opt.spec);
  const ResourcePlan plan = make_plan(sys);
  if (opt.format == "json") {
    auto doc = plan_json(plan);
    if (against) doc["against"] = against_json(*against);
    fmt::print("{}\n", doc.dump(2));
    return;
  }
  fmt::print("{}", render_plan_text(plan));
  // Names and paths from OLD, which a pull request can write: no terminal escapes reach the screen.
  if (against) fmt::print("\n{}", printable(render_against_text(*against)));
}

/// The output folder `plan --against` compares with: DIR itself when it holds k8s/, else
/// DIR/<system> (the folder given to compile -o). Reads k8s/**.yaml and model.yaml as untrusted
/// input (io/untrusted_folder.h): CI compares with a base branch a pull request can change.
std::optional<OutputFiles> read_old_output(const std::string& dir, const std::string& system, std::string& folder,
                                           std::string& error) {
  folder = dir;
  std::string unread;
  bool nested = false;
  {
    UntrustedFolder given(dir, unread);
    nested = !given.is_folder("k8s") && given.is_folder(system + "/k8s");
    if (nested) folder = (fs::path(dir) / system).generic_string();
  }
  // DIR/<system> reached from DIR without following a link, as every file below it is.
  UntrustedFolder old = nested ? UntrustedFolder(dir, system, unread) : UntrustedFolder(dir, unread);
  if (!old.is_folder("k8s")) {
    error = fmt::format("'{}' holds no k8s/ folder (nor does '{}'): give the output folder applied last, as compile "
                        "wrote it",
                        printable(dir), printable((fs::path(dir) / system).generic_string()));
    return std::nullopt;
  }
  OutputFiles files;
  // model.yaml for the pools, addons/'s Kueue configuration for the controller's restart.
  std::vector<std::string> paths{"model.yaml", std::string(k8s::kKueueConfigFile)};
  for (const auto& e : old.list("k8s", error)) {
    const bool yaml = e.path.ends_with(".yaml") || e.path.ends_with(".yml");
    if (yaml && e.type == UntrustedFolder::Entry::Type::file) paths.push_back(e.path);
    else if (yaml && e.type != UntrustedFolder::Entry::Type::folder)
      paths.push_back(e.path);  // read() says why it is refused
  }
  if (!error.empty()) return std::nullopt;
  for (const auto& p : paths) {
    auto text = old.read(p, error);
    if (!error.empty()) return std::nullopt;
    if (!text) continue;  // no model.yaml: pools are not compared (the plan says so)
    files[p] = std::move(*text);
  }
  return files;
}

int cmd_plan(const Options& opt) {
  int rc = kOk;
  if (auto c = compile_one(opt, rc)) {
    if (opt.against.empty()) {
      print_plan(opt, c->system);
      return kOk;
    }
    std::string folder, error;
    g_activity = fmt::format("reading '{}'", opt.against);
    const auto old = read_old_output(opt.against, c->system.name, folder, error);
    if (!old) {
      fmt::print(stderr, "trainc: error: {}\n", error);
      return kUsage;
    }
    g_activity = fmt::format("comparing '{}' with '{}'", opt.spec, folder);
    AgainstPlan against;
    try {
      against = plan_against(c->system, make_plan(c->system), *old, c->files.files(), folder);
    } catch (const std::runtime_error& e) {
      fmt::print(stderr, "trainc: error: {}\n", e.what());
      return kUsage;
    }
    print_plan(opt, c->system, &against);
    return kOk;
  }
  if (rc != kSpecError) return rc;
  // A spec right in its parts whose pods would not run where it puts them: the plan shows where
  // each pod lands and what is left, which is what the errors above are about.
  std::string io_error;
  const SourcePtr src = read_source(opt.spec, io_error);
  Diagnostics again;  // reported above already
  if (auto sys = src ? lower_whole(src, again) : std::nullopt) {
    print_plan(opt, *sys);
    fmt::print(stderr, "trainc: the plan above would not run as written: see the errors before it\n");
  }
  return rc;
}

int cmd_graph(const Options& opt) {
  const std::string ext = fs::path(opt.graph_out).extension().string();
  if (!opt.graph_out.empty() && ext != ".svg" && ext != ".dot") {
    fmt::print(stderr, "trainc: error: -o '{}': the file must end in .svg or .dot\n", opt.graph_out);
    return kUsage;
  }
  int rc = kOk;
  auto c = compile_one(opt, rc);
  if (!c) return rc;
  g_activity = fmt::format("drawing '{}'", opt.spec);
  GraphShape shape;
  const std::string dot = graph_dot(c->system, &shape);
  if (ext == ".svg" && !shape.drawn_in_output())
    fmt::print(stderr, "trainc: note: laying out {} parts and {} connections; Graphviz may take minutes\n", shape.nodes,
               shape.edges);
  if (opt.graph_out.empty()) {
    fmt::print("{}", dot);
    return kOk;
  }
  std::string content = dot;
  if (ext == ".svg") {
    std::string error;
    auto svg = render_svg(dot, error);
    if (!svg) {
      fmt::print(stderr, "trainc: error: {} (write DOT instead with -o FILE.dot)\n", error);
      return kUsage;
    }
    content = *svg;
  }
  // Both forms carry trainc's generated-file notice, which marks a file trainc may replace.
  if (auto err = write_generated_file(opt.graph_out, content, std::string(kGeneratedNotice))) {
    fmt::print(stderr, "trainc: error: {}\n", *err);
    return kUsage;
  }
  fmt::print("wrote {}\n", opt.graph_out);
  return kOk;
}

int cmd_explain(const Options& opt) {
  if (opt.image_given) {
    if (!opt.field.empty() || opt.recursive || opt.list || opt.markdown) {
      fmt::print(stderr, "trainc: error: explain --image takes no field, --recursive, --list or --markdown\n");
      return kUsage;
    }
    if (const std::string why = image_reference_error(opt.image); !why.empty()) {
      fmt::print(stderr, "trainc: error: explain --image: {}\n", why);
      return kUsage;
    }
    fmt::print("{}", explain_image(opt.image, opt.explain_format == "json"));
    return kOk;
  }
  const auto schema = nlohmann::ordered_json::parse(spec_schema_text());
  if (opt.list) {
    for (const auto& p : schema_paths(schema)) fmt::print("{}\n", p);
    return kOk;
  }
  if (opt.markdown) {
    fmt::print("{}", reference_markdown(schema));
    return kOk;
  }
  std::string error;
  auto text = explain(schema, opt.field, opt.recursive, error);
  if (!text) {
    fmt::print(stderr, "trainc: error: {}\n", error);
    return kSpecError;
  }
  fmt::print("{}", *text);
  return kOk;
}

/// trainrt, its tracker script and the loopback preload, found next to this binary (build tree or install) or on PATH.
fs::path find_beside(const char* argv0, const std::vector<std::string>& candidates) {
  std::error_code ec;
  fs::path self = fs::canonical("/proc/self/exe", ec);
  if (ec) self = fs::absolute(argv0);
  for (const auto& rel : candidates)
    if (fs::exists(self.parent_path() / rel, ec)) return (self.parent_path() / rel).lexically_normal();
  return {};
}

int cmd_run(const Options& opt, const char* argv0) {
  if (!opt.local) {
    fmt::print(stderr, "trainc: run needs --local (runs the steps and Dask clusters on this machine); in a cluster, apply the "
                       "compiled manifests\n");
    return kUsage;
  }
  Options one = opt;
  one.specs = {opt.spec};
  std::vector<Compiled> results;
  std::vector<std::string> specs;
  if (int rc = compile_all(one, "", results, specs)) return rc;
  g_activity = fmt::format("running '{}' locally", opt.spec);
  LocalRunOptions run;
  run.scale = opt.scale;
  run.threads = opt.threads;
  const System& sys = results[0].system;
  run.spec_dir = fs::path(opt.spec).parent_path();
  if (run.spec_dir.empty()) run.spec_dir = ".";
  run.workdir = opt.workdir.empty() ? fs::path(".trainc-local") / sys.name : fs::path(opt.workdir);
  run.trainrt = !opt.trainrt.empty() ? fs::path(opt.trainrt) : find_beside(argv0, {"../runtime/trainrt", "trainrt"});
  if (run.trainrt.empty()) run.trainrt = "trainrt";
  run.tracker = !opt.tracker.empty()
                    ? fs::path(opt.tracker)
                    : find_beside(argv0, {"../../runtime/train/tracker17.py", "../share/trainc/tracker17.py"});
  run.loopback_preload = find_beside(argv0, {"libtrainc-loopback.so", "../lib/trainc/libtrainc-loopback.so"});
  run.python = opt.python;
  run.s3rver = opt.s3rver;
  run.max_ranks = opt.max_ranks;
  for (const auto& text : opt.seeds) {
    std::string error;
    if (!parse_seed(text, run.seeds.emplace_back(), error)) {
      fmt::print(stderr, "trainc: {}\n", error);
      return kUsage;
    }
  }
  for (const auto& [texts, flag, kind] : {std::tuple{&opt.kills, "--kill", Fault::Kind::kill},
                                          std::tuple{&opt.preempts, "--preempt", Fault::Kind::preempt}})
    for (const auto& text : *texts) {
      std::string error;
      Fault& f = run.faults.emplace_back();
      f.kind = kind;
      if (!parse_fault(text, flag, f, error)) {
        fmt::print(stderr, "trainc: {}\n", error);
        return kUsage;
      }
    }
  if (!opt.chaos.empty()) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long seed = std::strtoull(opt.chaos.c_str(), &end, 10);
    if (opt.chaos.find_first_not_of("0123456789") != std::string::npos || *end != '\0' || errno == ERANGE) {
      fmt::print(stderr, "trainc: --chaos '{}': expected a seed, a whole number from 0 to 2^64-1\n", opt.chaos);
      return kUsage;
    }
    run.chaos_seed = seed;
  }
  run.chaos_within = opt.chaos_within;
  run.serve = opt.serve;
  return run_local(sys, run);
}

/// Parses the command line and runs one subcommand; returns the exit code.
int run_cli(int argc, char** argv) {
  CLI::App app{"trainc: compiles one training-system spec into Kubernetes manifests and a runbook.\n"
               "Exit codes: 0 ok, 1 spec errors, drift or orphaned output, 2 usage or I/O errors."};
  app.set_version_flag("--version", std::string("trainc ") + TRAINC_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // --diagnostics works before or after the subcommand
  Options opt;
  app.add_option("--diagnostics", opt.diagnostics,
                 "how to print spec errors (github: GitHub Actions workflow commands, drift included)")
      ->check(CLI::IsMember({"text", "json", "github"}))
      ->capture_default_str();

  auto* compile = app.add_subcommand("compile", "validate specs and write DIR/<system name>/ for each");
  compile->add_option("specs", opt.specs, "spec files (.yaml, .yml, .jsonnet)")->required();
  compile->add_option("-o,--out", opt.out_dir, "output folder")->capture_default_str();
  const char* skip_help = "skip (with a note) files that are not trainc specs: no apiVersion: trainc/... (for hooks "
                          "given every changed YAML file)";
  compile->add_flag("--skip-non-specs", opt.skip_non_specs, skip_help);
  const char* allow_help = "a value that looks like a credential but is not: its env name, the value, or its data path "
                           "as the error prints it (repeatable)";
  compile->add_option("--allow-secret-like", opt.allow_secret_like, allow_help);

  auto* check = app.add_subcommand("check", "validate specs; write nothing");
  check->add_option("specs", opt.specs, "spec files")->required();
  check->add_flag("--skip-non-specs", opt.skip_non_specs, skip_help);
  check->add_option("--allow-secret-like", opt.allow_secret_like, allow_help);

  auto* diff = app.add_subcommand("diff", "exit 1 with a summary and a unified diff when DIR differs from what the "
                                          "specs compile to, or holds a folder whose spec is gone");
  diff->add_option("specs", opt.specs,
                   "spec files (none: only look for orphaned folders); with --live one spec, or an output folder "
                   "(its recorded spec, which must compile to it)");
  auto* diff_against = diff->add_option("--against", opt.against, "folder holding earlier output (as given to compile -o)");
  auto* diff_live = diff->add_flag(
      "--live", opt.live,
      "compare with the cluster instead (one spec): each object read and applied as a server-side dry run, read-only; "
      "what would be created, changed, rolled, re-run, pruned or refused, and what drifted since the last apply. "
      "Exit 0: nothing would change; 1: changes or drift; 2: the cluster cannot be asked; 3: the server refuses a "
      "change");
  diff_live->excludes(diff_against);
  diff->add_option("--context", opt.context, "diff --live: the kubeconfig context (default: the current one)")
      ->needs(diff_live);
  diff->add_option("--kubeconfig", opt.kubeconfig, "diff --live: the kubeconfig file (default: kubectl's)")
      ->needs(diff_live);
  diff->add_option("--format", opt.format, "diff --live: text or json")->check(CLI::IsMember({"text", "json"}))
      ->needs(diff_live);
  diff->add_flag("--read-only", opt.read_only, "diff --live: reads alone, no dry run (changes judged by trainc's rules)")
      ->needs(diff_live);
  diff->add_option("--allow-secret-like", opt.allow_secret_like, allow_help);
  diff->add_flag("--stat", opt.stat, "print the summary of what changed, without the unified diff");
  diff->add_flag("--all", opt.all,
                 "also compare every folder in DIR with the spec it records (what the pre-commit hook runs)");
  diff->add_flag("--skip-non-specs", opt.skip_non_specs,
                 "skip (with a note) files that are not trainc specs; a file inside a folder of DIR stands for "
                 "that folder's spec");

  auto* run = app.add_subcommand("run", "run a spec's steps (datagen, xgboost, torchrun, commands) and Dask clusters with their client steps on this machine");
  run->add_option("spec", opt.spec, "the spec")->required();
  run->add_flag("--local", opt.local, "run here: ranks as local processes on loopback, stores as local folders");
  run->add_option("--scale", opt.scale, "multiply every datagen step's rows (e.g. 1e-6 turns 6TB into 6MB)")
      ->check(CLI::PositiveNumber);
  run->add_option("--workdir", opt.workdir, "where stores live (default .trainc-local/<system>)");
  run->add_option("--threads", opt.threads, "threads per trainrt process (default: all cores)");
  run->add_option("--trainrt", opt.trainrt, "the trainrt binary (default: beside trainc, else PATH)");
  run->add_option("--tracker", opt.tracker,
                  "XGBoost 1.7's tracker script, for multi-rank xgboost steps (default: tracker17.py in ../share/trainc "
                  "beside trainc, or the source tree's beside a build tree)");
  run->add_option("--seed", opt.seeds,
                  "STORE[:/PATH]=FOLDER: upload FOLDER into the store before the first step (repeatable)");
  run->add_option("--python", opt.python,
                  "a python3 with torch (and Ray, for Ray steps) for torchrun, command and Ray steps (default: $TRAINC_PYTHON, "
                  "else the environment tools/install-python.sh installs, else the first on PATH that has them)");
  run->add_option("--s3rver", opt.s3rver,
                  "s3rver's bin/s3rver.js, the local S3 server (default: $TRAINC_S3RVER, else where install-deps puts it)");
  run->add_option("--max-ranks", opt.max_ranks,
                  "most ranks a torchrun step runs at once; more processes per node are lowered (default: max(4, cores))");
  run->add_option("--kill", opt.kills,
                  "[STEP:]RANK@SECONDS or [STEP:]RANK@checkpoint:N[+SECONDS]: SIGKILL pod RANK's process group (a "
                  "crashed node) SECONDS after the pods of STEP's first attempt start, or SECONDS after the store "
                  "STEP syncs its checkpoints to holds N of them (STEP: the first torchrun or command step); as on "
                  "the cluster, the step's gang restarts from its newest checkpoint and one retry is spent "
                  "(repeatable; a kill whose attempt ended first moves to the next attempt)")
      ->allow_extra_args(false);
  run->add_option("--preempt", opt.preempts,
                  "[STEP:]RANK@SECONDS or [STEP:]RANK@checkpoint:N[+SECONDS]: preempt pod RANK as --kill would kill it: SIGTERM, then SIGKILL after the "
                  "pod's termination grace; the gang restarts without spending a retry (repeatable)")
      ->allow_extra_args(false);
  run->add_option("--chaos", opt.chaos,
                  "SEED: one --kill whose step, rank and time (1 s to --chaos-within) come from SEED; printed, to be "
                  "run again with --kill");
  run->add_option("--chaos-within", opt.chaos_within, "the latest second --chaos picks (default 60)")
      ->check(CLI::Range(1.0, 7 * 24 * 3600.0));
  run->add_flag("--serve", opt.serve,
                "after the steps, keep the services up until interrupted (default: start each, check its models are "
                "ready, stop); Triton services run on NVIDIA's Triton build that tools/install-python.sh installs");

  auto* plan = app.add_subcommand("plan", "print what a spec will hold before it is paid for: per pool the nodes, "
                                          "accelerators, quota metrics and price per hour; per workload the pods and "
                                          "accelerator-hours");
  plan->add_option("spec", opt.spec, "the spec")->required();
  plan->add_option("--against", opt.against,
                   "the output folder applied last (e.g. out/<system>): also show, per object and pool, what applying "
                   "the new output over it does (create, update, roll, replace, rerun, remove) and the steps that run; "
                   "exits 0 whatever changes");
  plan->add_option("--format", opt.format, "text, or json (schemas/plan.v1.schema.json)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  auto* graph = app.add_subcommand("graph", "draw a spec's system: pools, steps and their needs, clusters, services, "
                                            "stores and who reads or writes them, identities and their grants");
  graph->add_option("spec", opt.spec, "the spec")->required();
  graph->add_option("-o,--out", opt.graph_out, "write FILE.svg (laid out by Graphviz) or FILE.dot; default: DOT on stdout");

  auto* explain_cmd = app.add_subcommand("explain", "describe a spec field from the schema: type, default, allowed "
                                                    "values, description (e.g. pipeline.checkpoints.pattern)");
  explain_cmd->add_option("field", opt.field, "dot-separated field path; none: the top level");
  explain_cmd->add_flag("-r,--recursive", opt.recursive, "list every field under it");
  explain_cmd->add_flag("--list", opt.list, "print every field path, one per line");
  explain_cmd->add_flag("--markdown", opt.markdown, "print the whole field reference as a markdown table (docs/reference.md)");
  explain_cmd->add_option("--image", opt.image, "instead of a field: what trainc knows of an image reference "
                                                "(stdlib/images.yaml): its user, home, tools, CUDA build and GPU kernels")
      ->each([&opt](const std::string&) { opt.image_given = true; });
  explain_cmd->add_option("--format", opt.explain_format, "with --image: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  auto* completion = app.add_subcommand("completion", "print a shell completion script (see the README to install it)");
  completion->add_option("shell", opt.shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));

  auto* schema = app.add_subcommand("schema", "print the spec's JSON Schema (for editors: yaml-language-server)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    const std::string hint = usage_suggestion(app, std::vector<std::string>(argv + 1, argv + argc));
    if (!hint.empty()) fmt::print(stderr, "trainc: {}\n", hint);
    return kUsage;
  }
  if (*schema) {
    std::fwrite(spec_schema_text().data(), 1, spec_schema_text().size(), stdout);
    return kOk;
  }
  if (*completion) {
    const ValueKinds values{{" --diagnostics", "text json github"}, {"compile --out", "dir"}, {"diff --against", "dir"},
                            {"run --workdir", "dir"}, {"run --scale", "none"}, {"run --threads", "none"},
                            {"run --seed", "none"}, {"run --max-ranks", "none"},
                            {"run --kill", "none"}, {"run --preempt", "none"}, {"run --chaos", "none"},
                            {"run --chaos-within", "none"},
                            {"plan --format", "text json"}, {"plan --against", "dir"}, {"diff --format", "text json"},
                            {"diff --context", "none"}, {"diff --kubeconfig", "file"}, {"graph --out", "file"}, {"explain field", "paths"},
                            {"explain --image", "none"}, {"explain --format", "text json"},
                            {"completion shell", "bash zsh"}, {"schema ", "none"}};
    fmt::print("{}", completion_script(app, opt.shell, values));
    return kOk;
  }
  if (*plan) return cmd_plan(opt);
  if (*graph) return cmd_graph(opt);
  if (*explain_cmd) return cmd_explain(opt);
  if (*compile) return cmd_compile(opt);
  if (*check) return cmd_check(opt);
  if (*diff) return cmd_diff(opt);
  if (*run) return cmd_run(opt, argv[0]);
  return kUsage;
}

/// A bug, not a spec error: exit 2 like other failures outside the spec, and say what was going on.
int internal_error(std::string_view what) {
  std::fflush(stdout);
  fmt::print(stderr, "trainc: internal error: {} while {}; please report it\n",
             what.empty() ? "an exception without a message" : what, g_activity);
  return kUsage;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_cli(argc, argv);
  } catch (const std::exception& e) {
    return internal_error(e.what());
  } catch (...) {
    return internal_error("an exception that is not a std::exception");
  }
}
