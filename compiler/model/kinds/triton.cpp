// Triton's facts: what the passes need to know about a Triton server, in one place (ServerFacts).
#include <fmt/format.h>

#include "model/model.h"

namespace trainc {

std::vector<ServerPort> Triton::ports() { return {{"http", 8000}, {"grpc", 8001}, {"metrics", 8002}}; }

std::vector<std::string> Triton::argv() const {
  std::vector<std::string> out{"tritonserver", "--model-repository=" + repository.url};
  for (const auto& p : ports()) out.push_back(fmt::format("--{}-port={}", p.name, p.number));
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

// Ready means every model in the repository is loaded (strict readiness).
ServerProbes Triton::probes() { return {"/v2/health/ready", "/v2/health/ready", "/v2/health/live"}; }

// HTTP/REST is the KServe v2 protocol; gRPC paths are /<package>.<service>/<method>.
GatewayRoutes Triton::routes() { return {{"/v2"}, "/inference.GRPCInferenceService/"}; }

ScalingMetric Triton::scaling_metric() {
  return {"prometheus.googleapis.com|nv_inference_pending_request_count|gauge", "nv_inference_pending_request_count",
          "Triton's queue"};
}

MetricsEndpoint Triton::metrics() { return {"metrics", "/metrics"}; }

// The repository comes from `repository`, and the ports are fixed so probes, Service and gateway agree.
std::vector<std::string_view> Triton::reserved_flags() {
  return {"--model-repository", "--model-store", "--http-port", "--grpc-port", "--metrics-port"};
}

std::vector<HealthCheck> Triton::health_checks() const {
  std::vector<HealthCheck> out{{"/v2/health/ready", ""}};
  for (const auto& m : models) out.push_back({fmt::format("/v2/models/{}/ready", m), fmt::format("model '{}'", m)});
  return out;
}

// Triton loads each model of the repository from its folder, <model>/config.pbtxt naming its
// platform; it reads the repository when it starts, so the contents must be there before.
std::vector<StoreContents> Triton::store_contents() const {
  if (repository.url.empty()) return {};
  StoreContents c{&repository, {}, source ? &*source : nullptr, "source"};
  // And at least one version: a numbered folder beside the config, which Triton's default version
  // policy (latest 1) loads; a model with none fails to load ("at least one version must be
  // available under the version policy", the model repository docs' "Repository Layout").
  for (const auto& m : models) c.needs.push_back({m + "/config.pbtxt", fmt::format("model '{}'", m), m});
  return {c};
}

CallingExamples Triton::calling_examples(const std::string& image) const {
  const std::string model = models.empty() ? "MODEL" : models.front();
  // The seed's flow: the SDK image of the server's release runs image_client.
  GatewayClient client{"e.g. with the Triton SDK image's `image_client` (the seed's flow)",
                       image.substr(0, image.rfind("-py3")) + "-py3-sdk",
                       {"/workspace/install/bin/image_client", "-u", "$GATEWAY_IP:80", "-m", model, "-c", "3", "-s",
                        "INCEPTION", "/workspace/images/mug.jpg"}};
  return {fmt::format("/v2/models/{}/ready", model), std::move(client)};
}

}  // namespace trainc
