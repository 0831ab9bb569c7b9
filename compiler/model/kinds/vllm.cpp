// vLLM's facts: what the passes need to know about a vLLM server, in one place (ServerFacts).
// Flags, paths and the metric are those of the image pinned in stdlib/catalog.yaml (servers.vllm).
#include <fmt/format.h>

#include <cctype>
#include <optional>
#include <regex>

#include "model/model.h"

namespace trainc {
namespace {

/// A parameter count as written: "72B", "1.5B", "135M", "1T", or "8x7B" (experts x size, counted
/// whole); nullopt for any other word. `experts` is set for the last form.
std::optional<double> parse_params(const std::string& word, bool* experts = nullptr) {
  static const std::regex re("^(?:([0-9]+)[xX])?([0-9]+(?:\\.[0-9]+)?)([MmBbTt])$");
  std::smatch m;
  if (!std::regex_match(word, m, re)) return std::nullopt;
  const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(m[3].str()[0])));
  const double scale = unit == 'M' ? 1e6 : unit == 'B' ? 1e9 : 1e12;
  const double n = m[1].matched ? std::stod(m[1]) : 1;
  if (experts) *experts = m[1].matched;
  return n * std::stod(m[2]) * scale;
}

/// The words of a model's name: its last path segment split at '-' and '_'.
std::vector<std::string> name_words(const std::string& name) {
  std::string last = name;
  while (last.size() > 1 && last.ends_with('/')) last.pop_back();
  last = last.substr(last.rfind('/') + 1);
  std::vector<std::string> out;
  std::string word;
  for (char c : last) {
    if (c == '-' || c == '_') {
      if (!word.empty()) out.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) out.push_back(word);
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Bytes a weight takes in `dtype` as vLLM's --dtype and --quantization, and the spec's `dtype`,
/// name it; nullopt for a name this does not know.
std::optional<double> dtype_bytes(const std::string& dtype) {
  const std::string d = lower(dtype);
  if (d == "float32" || d == "float" || d == "fp32") return 4;
  if (d == "bfloat16" || d == "float16" || d == "half" || d == "bf16" || d == "fp16") return 2;
  if (d == "fp8" || d == "int8" || d == "8bit" || d == "w8a8" || d == "fbgemm_fp8") return 1;
  if (d == "int4" || d == "4bit" || d == "awq" || d == "gptq" || d == "awq_marlin" || d == "gptq_marlin" ||
      d == "bitsandbytes" || d == "fp4" || d == "nvfp4" || d == "mxfp4")
    return 0.5;
  return std::nullopt;
}

/// The value of flag `--name=VALUE` in `args`, or "".
std::string flag_value(const std::vector<std::string>& args, std::string_view name) {
  for (const auto& a : args)
    if (a.starts_with(name) && a.size() > name.size() && a[name.size()] == '=') return a.substr(name.size() + 1);
  return "";
}

}  // namespace

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

// The weights' size: `params` x `dtype` when the spec gives them, else what the model's name and
// vLLM's flags say. A mixture of experts written "8x7B" counts every expert whole (56B for
// Mixtral-8x7B, whose experts share their attention layers: 46.7B in fact), an upper bound that
// errs towards a larger machine; a name such as "Qwen3-30B-A3B" gives its total (30B), since every
// expert stays in GPU memory even if only 3B are active per token.
ModelMemory Vllm::model_memory() const {
  ModelMemory out;
  out.sized = true;
  out.params_key = "params";
  out.require_known = require_fit;
  const std::string name = model.empty() ? weights.path : model;
  const std::string shown = model.empty() ? weights.store + ":" + weights.path : model;
  if (const std::string u = flag_value(args, "--gpu-memory-utilization"); !u.empty()) {
    try {
      out.utilization = std::stod(u);
    } catch (const std::exception&) {
      out.utilization = 0;  // vLLM refuses the flag itself; the default stands here
    }
  }
  // The parameter count.
  std::optional<double> count;
  std::string count_how;
  if (!params.empty()) {
    count = parse_params(params);
    count_how = fmt::format("{} parameters (params)", params);
  } else {
    for (const auto& w : name_words(name)) {
      bool experts = false;
      if (auto n = parse_params(w, &experts)) {
        count = n;
        count_how = experts ? fmt::format("{} parameters as the name '{}' states them ({}, every expert counted whole)",
                                          fmt::format("{:g}B", *n / 1e9), shown, w)
                            : fmt::format("{} parameters as the name '{}' states them", w, shown);
        break;
      }
    }
  }
  if (!count) {
    out.how = fmt::format("the name '{}' states no size (such as 7B) and the spec gives no 'params'", shown);
    return out;
  }
  // The bytes a parameter takes.
  double bytes = 2;
  std::string used = "bfloat16";
  std::string bytes_how = "bfloat16, assumed: vLLM loads the checkpoint's own dtype, which the spec does not give";
  const std::string quant = flag_value(args, "--quantization"), dt = flag_value(args, "--dtype");
  auto from_name = [&]() -> std::optional<std::string> {
    for (const auto& w : name_words(name))
      if (dtype_bytes(w) && lower(w) != "float" && lower(w) != "half") return w;
    return std::nullopt;
  };
  if (!dtype.empty() && dtype_bytes(dtype)) {
    bytes = *dtype_bytes(dtype);
    used = dtype;
    bytes_how = fmt::format("{}, dtype", dtype);
  } else if (!quant.empty() && dtype_bytes(quant)) {
    bytes = *dtype_bytes(quant);
    used = quant;
    bytes_how = fmt::format("{}, --quantization", quant);
  } else if (auto w = from_name()) {
    bytes = *dtype_bytes(*w);
    used = *w;
    bytes_how = fmt::format("{}, as the name states", *w);
  } else if (!dt.empty() && dtype_bytes(dt)) {
    bytes = *dtype_bytes(dt);
    used = dt;
    bytes_how = fmt::format("{}, --dtype", dt);
  }
  // GPUs below compute capability 8.0 (T4 7.5, V100 7.0) have no bfloat16: vLLM refuses it there,
  // or casts a bfloat16 checkpoint it loads as it is to float16, whose range is narrower.
  if (lower(used) == "bfloat16" || lower(used) == "bf16") {
    out.min_compute_capability = 80;
    out.dtype = "bfloat16";
  }
  out.weight_bytes = *count * bytes;
  out.how = fmt::format("{} x {:g} byte(s) each ({})", count_how, bytes, bytes_how);
  return out;
}

}  // namespace trainc
