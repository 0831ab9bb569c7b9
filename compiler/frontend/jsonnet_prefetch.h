#pragma once
// The prefetch: the Jsonnet specs of one invocation evaluated ahead, side by side, in sandboxed
// servers (jsonnet_sandbox.h), while trainc goes on with the specs before them.
#include <string>
#include <vector>

#include "base/source.h"
#include "frontend/jsonnet_vm.h"

namespace trainc::jsonnet {

/// A spec to evaluate: its name, its text and the folder its imports are jailed to.
struct Request {
  std::string name, text, root;
  bool operator==(const Request&) const = default;
};

/// The request that evaluates `file`.
Request request_for(const SourceFile& file);

/// Sends these specs ahead, in order, to as many servers as the machine has cores (at most 4).
void prefetch(std::vector<Request> requests);

/// Evaluates `r`: takes its answer if it was sent ahead, else sends it now and waits for it.
Evaluation evaluate(const Request& r);

}  // namespace trainc::jsonnet
