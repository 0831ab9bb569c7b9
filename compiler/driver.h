#pragma once
// The pipeline: load -> validate -> lower -> check -> plan -> emit -> verify objects. Writing is
// the CLI's job (io/).
#include <optional>
#include <string>

#include "base/diagnostics.h"
#include "checks/checks.h"
#include "emit/output_sink.h"
#include "model/model.h"

namespace trainc {

struct Compiled {
  System system;
  OutputSink files;  ///< every file of the output folder, .trainc-manifest included
};

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

}  // namespace trainc
