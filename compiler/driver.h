#pragma once
// The pipeline: load -> validate -> lower -> check -> plan -> emit -> verify objects. Writing is
// the CLI's job (io/).
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "base/diagnostics.h"
#include "checks/checks.h"
#include "base/output_sink.h"
#include "model/model.h"

namespace trainc {

struct Compiled {
  System system;
  OutputSink files;  ///< every file of the output folder, .trainc-manifest included
};

/// Whether `name` is read as Jsonnet (*.jsonnet, *.libsonnet) rather than YAML.
bool is_jsonnet(const std::string& name);

/// Reads a spec file; nullopt (with `error` set) when it cannot be read.
SourcePtr read_source(const std::string& path, std::string& error);

/// Where `spec` and `out_dir` (as named on the command line) sit in the git work tree holding the
/// spec; see Origin. An empty `out_dir` (a command that writes no output) gives "out".
Origin make_origin(const std::string& spec, const std::string& out_dir);

/// Loads what every compile needs once per process (the machine catalog, the price book, the spec
/// schema) in the background (base/background.h) while the caller reads its first spec or waits for
/// Jsonnet; the destructor waits for it. Those loads take about 10 ms, and the first compile would
/// wait for them anyway. Nothing is started on a one-core machine, where it would only take turns.
class WarmUp {
 public:
  WarmUp();
  ~WarmUp();
  WarmUp(const WarmUp&) = delete;
  WarmUp& operator=(const WarmUp&) = delete;
};

/// Compiles one spec (YAML, or Jsonnet for *.jsonnet / *.libsonnet). nullopt when the spec has
/// errors, all of which are in `diags`. `origin` goes into System::origin and the manifest. Every
/// emitted Kubernetes object is validated against its schema (emit/verify_objects.h); one that does
/// not match throws InvalidObjectError, an internal error.
std::optional<Compiled> compile_source(const SourcePtr& source, Diagnostics& diags, const Origin& origin = {},
                                       const CheckOptions& checks = {});

/// The spec's system when its only errors are where its pods would run (the topology and
/// placement checks, run_checks' `whole`): for `trainc plan`, which shows the placement then.
/// nullopt otherwise. Its diagnostics go to `diags`.
std::optional<System> lower_whole(const SourcePtr& source, Diagnostics& diags);

/// One spec of compile_many, and what compiling it gave.
struct SpecJob {
  SourcePtr source;
  Origin origin;
  std::optional<std::string> skipped;  ///< with skip_non_specs: why the file is not a trainc spec
  std::optional<Compiled> compiled;    ///< nullopt: skipped, or errors (in diags)
  Diagnostics diags;                   ///< this spec's alone
  std::exception_ptr error;            ///< an exception (an internal error) thrown while compiling it
};

/// Compiles every job, side by side on the machine's cores (at most 4): the calling thread takes
/// the Jsonnet specs, in order, since evaluating them may fork a Jsonnet server (jsonnet_loader.h),
/// and the YAML specs that are left; worker threads take YAML specs only, and hold the fork gate
/// (base/background.h) while they compile one. Each job's result and diagnostics are its own, so
/// the outcome does not depend on which thread ran what. With `skip_non_specs`, a file that is not
/// a trainc spec (spec_detect.h) is only marked skipped.
///
/// What the threads share: the catalog, price book and spec schema (loaded once, then only read),
/// the Kubernetes schema cache (verify_objects.cpp, under its lock), Graphviz (graph.cpp, one graph
/// at a time) and the global locale's ctype cache (filled before the workers start). The schema
/// validators and key patterns are per thread. `./dev.sh tsan` checks this with ThreadSanitizer.
void compile_many(std::vector<SpecJob>& jobs, const CheckOptions& checks, bool skip_non_specs);

}  // namespace trainc
