// vLLM's facts: what the passes need to know about a vLLM server, in one place (ServerFacts).
// Flags, paths and the metric are those of the image pinned in stdlib/catalog.yaml (servers.vllm).
#include <fmt/format.h>

#include "model/model.h"

namespace trainc {

// The OpenAI API, /health and /metrics share one port.
std::vector<ServerPort> Vllm::ports() { return {{"http", 8000}}; }

std::vector<std::string> Vllm::argv() const {
  // Weights in GCS are streamed to the GPUs by the Run:ai Model Streamer, which signs in with
  // Google's default credentials: the pod's Workload Identity.
  std::vector<std::string> out{"vllm", "serve", weights.url.empty() ? model : weights.url};
  out.push_back(fmt::format("--port={}", ports().front().number));
  out.push_back("--served-model-name=" + served_name);
  out.push_back(fmt::format("--tensor-parallel-size={}", tensor_parallel));
  if (!revision.empty()) out.push_back("--revision=" + revision);
  if (!weights.url.empty()) out.push_back("--load-format=runai_streamer");
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

// /health answers once the engine is up; until then the port is closed.
ServerProbes Vllm::probes() { return {"/health", "/health", "/health"}; }

// The OpenAI API (/v1/chat/completions, /v1/completions, /v1/models, ...) and the health check
// health.sh asks through the gateway; vLLM has no gRPC API.
GatewayRoutes Vllm::routes() { return {{"/v1/", "/health"}, ""}; }

// Managed Prometheus keeps vLLM's series names, colon included, and the adapter serves them as
// prometheus.googleapis.com|<name>|<kind> (stdlib/catalog.yaml, servers.vllm.source).
ScalingMetric Vllm::scaling_metric() {
  return {"prometheus.googleapis.com|vllm:num_requests_waiting|gauge", "vllm:num_requests_waiting", "vLLM's queue"};
}

MetricsEndpoint Vllm::metrics() { return {"http", "/metrics"}; }

// The model, its name, revision and load format come from `vllm`, the tensor parallelism from the
// service's GPUs, the token from `hfToken`; the port is fixed so probes, Service and gateway agree.
std::vector<std::string_view> Vllm::reserved_flags() {
  return {"--model",    "--port",        "--host",    "--served-model-name", "--tensor-parallel-size",
          "--revision", "--load-format", "--hf-token"};
}

// vLLM's docs warn of both (docs.vllm.ai usage/security, "--trust-remote-code" and
// "--allowed-local-media-path" under the engine arguments).
std::vector<std::pair<std::string_view, std::string_view>> Vllm::risky_flags() {
  return {{"--trust-remote-code", "runs the Python code of the model's repository inside the server"},
          {"--allowed-local-media-path", "lets any request that reaches the server read files under that path"}};
}

std::vector<AcceptedRisk> Vllm::accepted_risks() const {
  std::vector<AcceptedRisk> out;
  for (const auto& a : args) {
    const std::string flag = a.substr(0, a.find('='));
    for (const auto& [risky, what] : risky_flags())
      if (flag.size() > 2 && risky.starts_with(flag))  // argparse takes an unambiguous prefix
        out.push_back({std::string(risky), std::string(what), args_reason});
  }
  return out;
}

std::vector<const StoreRef*> Vllm::store_refs() const {
  if (weights.store.empty()) return {};
  return {&weights};
}

// Serving means /v1/models lists the model under the name clients use.
std::vector<HealthCheck> Vllm::health_checks() const {
  return {{"/health", ""}, {"/v1/models", fmt::format("model '{}'", served_name), served_name}};
}

// Any HTTP client speaks the OpenAI API: the runbook shows curl, no client image.
CallingExamples Vllm::calling_examples(const std::string&) const { return {"/v1/models", std::nullopt}; }

}  // namespace trainc
