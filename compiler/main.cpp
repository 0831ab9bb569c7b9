// trainc: compile training-system specs into Kubernetes manifests and a runbook.
// Exit codes: 0 ok, 1 spec errors or drift, 2 usage or I/O errors (and internal errors, which are bugs).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "driver.h"
#include "frontend/schema_check.h"
#include "io/tree_writer.h"
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
  std::string out_dir = "out";
  std::string against;
  std::string diagnostics = "text";
};

/// Compiles every spec; all diagnostics are printed together. Empty result on any error.
int compile_all(const Options& opt, std::vector<Compiled>& results) {
  Diagnostics diags;
  std::map<std::string, std::string> seen;  // system name -> spec
  for (const auto& spec : opt.specs) {
    g_activity = fmt::format("compiling '{}'", spec);
    std::string io_error;
    SourcePtr src = read_source(spec, io_error);
    if (!src) {
      fmt::print(stderr, "trainc: error: {}\n", io_error);
      return kUsage;
    }
    if (auto compiled = compile_source(src, diags)) {
      auto [it, fresh] = seen.emplace(compiled->system.name, spec);
      if (!fresh) {
        diags.report({Severity::error, spec, {}, "/name",
                      fmt::format("system '{}' is also defined by '{}'; each spec compiles to its own folder, so names "
                                  "must differ",
                                  compiled->system.name, it->second),
                      {}});
        continue;
      }
      results.push_back(std::move(*compiled));
    }
  }
  if (diags.has_errors()) {
    g_activity = "printing diagnostics";
    std::fputs((opt.diagnostics == "json" ? diags.render_json() : diags.render_text()).c_str(), stderr);
    results.clear();
    return kSpecError;
  }
  return kOk;
}

int cmd_compile(const Options& opt) {
  std::vector<Compiled> results;
  if (int rc = compile_all(opt, results)) return rc;
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
  if (int rc = compile_all(opt, results)) return rc;
  for (const auto& r : results) fmt::print("{}: ok (system '{}', {} step(s))\n", opt.specs[&r - &results[0]], r.system.name, r.system.steps.size());
  return kOk;
}

int cmd_diff(const Options& opt) {
  std::vector<Compiled> results;
  if (int rc = compile_all(opt, results)) return rc;
  bool drift = false;
  for (const auto& r : results) {
    g_activity = fmt::format("comparing '{}' with '{}'", r.system.name,
                             (fs::path(opt.against) / r.system.name).generic_string());
    std::string error;
    std::string diff = diff_tree(opt.against, r.system.name, r.files, error);
    if (!error.empty()) {
      fmt::print(stderr, "trainc: {}\n", error);
      drift = true;
      continue;
    }
    if (!diff.empty()) {
      std::fputs(diff.c_str(), stdout);
      drift = true;
    }
  }
  if (drift)
    fmt::print(stderr, "trainc: '{}' differs from what the spec compiles to; run 'trainc compile {} -o {}'\n",
               opt.against, fmt::join(opt.specs, " "), opt.against);
  return drift ? kSpecError : kOk;
}

/// trainrt and its tracker script, found next to this binary (build tree or install) or on PATH.
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
    fmt::print(stderr, "trainc: run needs --local (runs trainrt steps and Dask clusters on this machine); in a cluster, apply the "
                       "compiled manifests\n");
    return kUsage;
  }
  Options one = opt;
  one.specs = {opt.spec};
  std::vector<Compiled> results;
  if (int rc = compile_all(one, results)) return rc;
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
  return run_local(sys, run);
}

/// Parses the command line and runs one subcommand; returns the exit code.
int run_cli(int argc, char** argv) {
  CLI::App app{"trainc: compiles one training-system spec into Kubernetes manifests and a runbook.\n"
               "Exit codes: 0 ok, 1 spec errors or drift, 2 usage or I/O errors."};
  app.set_version_flag("--version", std::string("trainc ") + TRAINC_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // --diagnostics works before or after the subcommand
  Options opt;
  app.add_option("--diagnostics", opt.diagnostics, "how to print spec errors")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  auto* compile = app.add_subcommand("compile", "validate specs and write DIR/<system name>/ for each");
  compile->add_option("specs", opt.specs, "spec files (.yaml, .yml, .jsonnet)")->required();
  compile->add_option("-o,--out", opt.out_dir, "output folder")->capture_default_str();

  auto* check = app.add_subcommand("check", "validate specs; write nothing");
  check->add_option("specs", opt.specs, "spec files")->required();

  auto* diff = app.add_subcommand("diff", "exit 1 with a unified diff when DIR differs from what the specs compile to");
  diff->add_option("specs", opt.specs, "spec files")->required();
  diff->add_option("--against", opt.against, "folder holding earlier output (as given to compile -o)")->required();

  auto* run = app.add_subcommand("run", "run a spec's trainrt steps (datagen, xgboost) and Dask clusters with their client steps on this machine");
  run->add_option("spec", opt.spec, "the spec")->required();
  run->add_flag("--local", opt.local, "run here: ranks as local processes on loopback, stores as local folders");
  run->add_option("--scale", opt.scale, "multiply every datagen step's rows (e.g. 1e-6 turns 6TB into 6MB)")
      ->check(CLI::PositiveNumber);
  run->add_option("--workdir", opt.workdir, "where stores live (default .trainc-local/<system>)");
  run->add_option("--threads", opt.threads, "threads per trainrt process (default: all cores)");
  run->add_option("--trainrt", opt.trainrt, "the trainrt binary (default: beside trainc, else PATH)");
  run->add_option("--tracker", opt.tracker, "XGBoost 1.7's tracker script, for multi-rank steps");

  auto* schema = app.add_subcommand("schema", "print the spec's JSON Schema (for editors: yaml-language-server)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUsage;
  }
  if (*schema) {
    std::fwrite(spec_schema_text().data(), 1, spec_schema_text().size(), stdout);
    return kOk;
  }
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
