// A service's own settings: its autoscaling bounds, and arguments that would change what trainc
// sets on the server.
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/data_path.h"
#include "base/overloaded.h"
#include "checks/checks.h"

namespace trainc {
namespace {

/// Refuses each of `args` that sets, or abbreviates, one of the `reserved` flags trainc sets on the
/// server itself. `prefixes` says how the server reads an abbreviation; `why` says where each
/// reserved setting comes from instead.
void check_reserved_flags(const std::vector<std::string>& args, const std::vector<std::string_view>& reserved,
                          std::string_view prefixes, std::string_view why, const std::string& ptr, const Document& doc,
                          Diagnostics& diags) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string flag = args[i].substr(0, args[i].find('='));
    // A prefix of a reserved flag either sets it or stops the server as ambiguous.
    std::vector<std::string> owned;
    for (std::string_view own : reserved)
      if (flag.size() > 2 && own.starts_with(flag)) owned.push_back(fmt::format("'{}'", own));
    if (owned.empty()) continue;
    const std::string what = owned.size() == 1 && owned[0] == "'" + flag + "'"
                                 ? owned[0] + " is"
                                 : fmt::format("'{}' is short for {} ({}), which {}", flag, fmt::join(owned, " or "),
                                               prefixes, owned.size() == 1 ? "is" : "are");
    doc.error(diags, ptr_index(ptr_key(ptr, "args"), i), fmt::format("{} trainc's to set: {}; remove it", what, why));
  }
}

void check_triton(const Triton& t, const std::string& ptr, const Document& doc, Diagnostics& diags) {
  // tritonserver reads its flags with getopt_long, which takes any unambiguous prefix of one.
  check_reserved_flags(t.args, Triton::reserved_flags(), "tritonserver takes any unambiguous prefix of a flag",
                       "the repository comes from 'repository' and the ports are fixed (http 8000, grpc 8001, "
                       "metrics 8002) so probes, Service and gateway agree",
                       ptr, doc, diags);
}

void check_vllm(const Service& s, const Vllm& v, const std::string& ptr, const Document& doc, Diagnostics& diags) {
  // vLLM splits one copy of the model over exactly the GPUs it sees: fewer would leave some idle,
  // more cannot start.
  if (s.gpus == 0)
    doc.error(diags, ptr,
              fmt::format("service '{}' runs vLLM without GPUs, but vllm/vllm-openai serves on CUDA GPUs only; place "
                          "it on a GPU pool",
                          s.name),
              Anchor::key);
  if (s.gpus > 0 && v.tensor_parallel != s.gpus)
    doc.error(diags, ptr_key(ptr, "tensorParallelSize"),
              fmt::format("tensorParallelSize {} does not match the {} GPU(s) each pod of service '{}' takes; vLLM "
                          "splits the model over exactly the GPUs it is given: set {} or remove it (it follows "
                          "'gpus')",
                          v.tensor_parallel, s.gpus, s.name, s.gpus));
  // Python's argparse takes an unambiguous prefix of a flag for the flag.
  check_reserved_flags(v.args, Vllm::reserved_flags(), "vLLM's argparse takes an unambiguous prefix of a flag",
                       "the model, its name, revision and load format come from 'vllm', the tensor parallelism from "
                       "'gpus', the token from 'hfToken', and the port is fixed (http 8000) so probes, Service and "
                       "gateway agree",
                       ptr, doc, diags);
  if (!v.args_reason.empty()) return;
  for (size_t i = 0; i < v.args.size(); ++i) {
    const std::string flag = v.args[i].substr(0, v.args[i].find('='));
    for (const auto& [risky, what] : Vllm::risky_flags())
      if (flag.size() > 2 && risky.starts_with(flag))  // argparse takes an unambiguous prefix
        doc.error(diags, ptr_index(ptr_key(ptr, "args"), i),
                  fmt::format("'{}' {} (vLLM's docs call it a security risk); say why that is acceptable for "
                              "service '{}' in `vllm.argsReason` (it goes into the runbook), or remove it",
                              risky, what, s.name));
  }
}

void check_autoscaling(const Service& s, const Document& doc, Diagnostics& diags) {
  const std::string aptr = ptr_key(s.ptr, "autoscaling");
  if (!written(doc, aptr)) return;
  if (written(doc, ptr_key(s.ptr, "replicas")))
    doc.error(diags, ptr_key(s.ptr, "replicas"),
              "with 'autoscaling' the autoscaler sets the replicas; remove 'replicas' (autoscaling.min is where "
              "it starts)",
              Anchor::key, {doc.note(aptr, "'autoscaling' is set here", Anchor::key)});
  if (s.min > s.max)
    doc.error(diags, ptr_key(aptr, "min"), fmt::format("autoscaling: min {} is above max {}", s.min, s.max),
              Anchor::value, {doc.note(ptr_key(aptr, "max"), "max set here")});
  else if (s.min == s.max && written(doc, ptr_key(aptr, "pendingRequests")))
    doc.error(diags, ptr_key(aptr, "pendingRequests"),
              fmt::format("min and max are both {}, so nothing scales on 'pendingRequests'; raise max or remove it",
                          s.min),
              Anchor::key);
}

}  // namespace

void check_service_settings(const System& sys, const Document& doc, Diagnostics& diags) {
  for (const auto& entry : sys.services) {
    const Service& s = entry.second;
    check_autoscaling(s, doc, diags);
    match(
        s.server, [&](const Triton& t) { check_triton(t, ptr_key(s.ptr, std::string(Triton::kName)), doc, diags); },
        [&](const Vllm& v) { check_vllm(s, v, ptr_key(s.ptr, std::string(Vllm::kName)), doc, diags); });
  }
}

}  // namespace trainc
