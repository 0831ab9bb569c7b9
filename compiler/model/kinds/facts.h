#pragma once
// What a kind tells the passes about itself. Each closed sum of the model (StepKind, Engine,
// ServerKind) has one interface here, a concept every alternative satisfies; model.h checks each
// alternative against it, one fact at a time, so a kind that lacks a fact does not compile and the
// message names the fact. Passes read these facts instead of asking which kind they hold
// (STYLE.md 16); match() stays for what a kind does differently (the objects it becomes).
#include <concepts>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace trainc {

struct StoreRef;
struct StoreLoc;
struct PodGroup;
struct Service;

/// A named port of a server container.
struct ServerPort {
  std::string_view name;  ///< also the Service port's name: its protocol prefix lets a mesh route it
  int number;
};

/// The HTTP paths the kubelet probes, on the server's HTTP port.
struct ServerProbes {
  std::string_view startup, readiness, liveness;
};

/// What the ingress gateway forwards to a server: its HTTP API under the prefixes `http`, and its
/// gRPC API under `grpc` ("" = no gRPC). gRPC paths cannot be rewritten, so gRPC is routed only to
/// a service exposed at the root.
struct GatewayRoutes {
  std::vector<std::string_view> http;
  std::string_view grpc;
};

/// The per-pod metric the HorizontalPodAutoscaler scales a server on.
struct ScalingMetric {
  std::string_view adapter_name;  ///< as the Custom Metrics Stackdriver Adapter serves it to the HPA
  std::string_view name;          ///< as the server exports it
  std::string_view measures;      ///< what it counts, in words that follow "requests per pod wait in"
};

/// Where Managed Prometheus scrapes a server (PodMonitoring).
struct MetricsEndpoint {
  std::string_view port;  ///< a name of ports()
  std::string_view path;
};

/// Words the user wrote that reach a command line, which the secret scan reads.
struct UserWords {
  const std::vector<std::string>* words;
  std::string_view key;  ///< their data path below the kind's key ("" = the kind's key itself)
};

/// A request health.sh makes of a server, on its HTTP port.
struct HealthCheck {
  std::string path;
  std::string proves;  ///< what passing shows, before "of service 'x'" ("" = the server is ready)
  std::string lists;   ///< a model the JSON answer must list as an "id" ("" = a 2xx answer is enough)
};

/// A file a store folder gets from the web, too large (or not the user's) to commit: downloaded with
/// curl and checked against its pinned SHA-256 before anything is uploaded.
struct FetchedFile {
  std::string url;     ///< https://
  std::string sha256;  ///< 64 lower-case hex digits
  std::string to;      ///< its path under the folder, e.g. densenet_onnx/1/model.onnx
  std::string ptr;
};

/// Where a store folder's contents come from; the scripts upload them before the server starts.
struct ContentSource {
  std::string folder;  ///< relative to the spec's folder, normalised; "" = none
  std::string gcs;     ///< gs://bucket/path, copied as it is; "" = none
  std::vector<FetchedFile> fetch;
  std::string ptr;
};

/// An object a server needs in a store folder before it can serve, and what it stands for.
struct NeededObject {
  std::string path;  ///< under the folder, e.g. densenet_onnx/config.pbtxt
  std::string what;  ///< e.g. "model 'densenet_onnx'"
  /// A folder beside `path` that must hold a numbered version folder with a file in it
  /// (densenet_onnx/1/model.onnx): how Triton finds a model's versions. "" = none needed.
  std::string versions_in;
};

/// What a server reads from a store folder: the objects it needs there, and where they come from.
struct StoreContents {
  const StoreRef* folder = nullptr;
  std::vector<NeededObject> needs;
  const ContentSource* source = nullptr;  ///< nullptr: filled by the user
  std::string_view source_key;            ///< the spec key below the kind's that names a source
};

/// A client program the runbook shows calling an exposed server through the gateway at
/// $GATEWAY_IP port 80.
struct GatewayClient {
  std::string how;    ///< how the runbook introduces it, after "Call it from outside the cluster, "
  std::string image;  ///< the image it runs in, with the host's network
  std::vector<std::string> argv;
};

/// The runbook's examples of calling a server.
/// A flag the server's own docs call risky that the spec passes, with the spec's reason for it.
struct AcceptedRisk {
  std::string flag, what, reason;
};

/// What a server's model needs of the pod's GPU memory, as far as the spec and the model's name
/// tell: the weights, and the share of each GPU the server takes. The check that it fits
/// (checks/services.cpp) adds the server's KV-cache floor (catalog servers.<kind>.memory).
struct ModelMemory {
  bool sized = false;       ///< the server loads one model whose size can be judged (vLLM); false: not judged
  double weight_bytes = 0;  ///< 0 when the size is unknown
  std::string how;          ///< how weight_bytes was found, or why it is unknown, in words
  std::string params_key;   ///< the spec key below the kind's that gives the size ("params")
  bool require_known = false;  ///< an unknown size is an error (the spec asks), not a warning
  double utilization = 0;      ///< the share of each GPU's memory it takes; 0 = the catalog's default
  /// The least compute capability (sm_XY as XY) of a GPU that runs the weights' dtype (80 for
  /// bfloat16), and that dtype; 0 = any GPU.
  int min_compute_capability = 0;
  std::string dtype;
};

struct CallingExamples {
  std::string ready_path;  ///< a GET any HTTP client can make that says whether it serves
  std::optional<GatewayClient> client;
};

/// A container an operator adds to a compute cluster's pods, beside trainc's own.
struct AddedContainer {
  std::string name;
  std::string group;  ///< the pod group whose pods get it (the lead's kLead, or a worker group)
  std::map<std::string, std::string> requests, limits;
  bool init = false;  ///< an init container: it runs before the others, so its requests do not add to theirs
};

// ---- the interfaces ------------------------------------------------------------------------
// One concept per fact, so a failed check names the fact; the kind's interface is all of them.

template <class T>
concept Named = requires {
  { T::kName } -> std::convertible_to<std::string_view>;
};

/// Server facts.
template <class T>
concept ServerPortsFact = requires {
  { T::ports() } -> std::same_as<std::vector<ServerPort>>;
};
template <class T>
concept ServerArgvFact = requires(const T& k) {
  { k.argv() } -> std::same_as<std::vector<std::string>>;
};
template <class T>
concept ServerProbesFact = requires {
  { T::probes() } -> std::same_as<ServerProbes>;
};
template <class T>
concept GatewayRoutesFact = requires {
  { T::routes() } -> std::same_as<GatewayRoutes>;
};
template <class T>
concept ScalingMetricFact = requires {
  { T::scaling_metric() } -> std::same_as<ScalingMetric>;
};
template <class T>
concept MetricsEndpointFact = requires {
  { T::metrics() } -> std::same_as<MetricsEndpoint>;
};
template <class T>
concept ReservedFlagsFact = requires {
  { T::reserved_flags() } -> std::same_as<std::vector<std::string_view>>;
};
template <class T>
concept AcceptedRisksFact = requires(const T& k) {
  { k.accepted_risks() } -> std::same_as<std::vector<AcceptedRisk>>;
};
template <class T>
concept ServerStoreRefsFact = requires(const T& k) {
  { k.store_refs() } -> std::same_as<std::vector<const StoreRef*>>;
};
template <class T>
concept UserWordsFact = requires(const T& k) {
  { k.user_words() } -> std::same_as<std::vector<UserWords>>;
};
template <class T>
concept HealthChecksFact = requires(const T& k) {
  { k.health_checks() } -> std::same_as<std::vector<HealthCheck>>;
};
template <class T>
concept StoreContentsFact = requires(const T& k) {
  { k.store_contents() } -> std::same_as<std::vector<StoreContents>>;
};
template <class T>
concept CallingExamplesFact = requires(const T& k, const std::string& image) {
  { k.calling_examples(image) } -> std::same_as<CallingExamples>;
};

template <class T>
concept ModelMemoryFact = requires(const T& k) {
  { k.model_memory() } -> std::same_as<ModelMemory>;
};

template <class T>
concept ServerFacts = Named<T> && ServerPortsFact<T> && ServerArgvFact<T> && ServerProbesFact<T> &&
                      GatewayRoutesFact<T> && ScalingMetricFact<T> && MetricsEndpointFact<T> &&
                      ReservedFlagsFact<T> && ServerStoreRefsFact<T> && UserWordsFact<T> && HealthChecksFact<T> &&
                      StoreContentsFact<T> && CallingExamplesFact<T> && ModelMemoryFact<T>;

/// Engine facts.
template <class T>
concept LeadFact = requires(const T& e) {
  { T::kLead } -> std::convertible_to<std::string_view>;
  { e.lead() } -> std::same_as<const PodGroup&>;
};
template <class T>
concept AddedContainersFact = requires(const T& e, const std::vector<PodGroup>& workers) {
  { e.added_containers(workers) } -> std::same_as<std::vector<AddedContainer>>;
};
template <class T>
concept LeadUsesApiFact = requires(const T& e, const std::vector<PodGroup>& workers) {
  { e.lead_uses_api(workers) } -> std::same_as<bool>;
};
template <class T>
concept PerJobFact = requires(const T& e) {
  { e.per_job_cluster() } -> std::same_as<bool>;
};
template <class T>
concept WorkersAutoscaleFact = requires {
  { T::workers_autoscale() } -> std::same_as<bool>;
};
template <class T>
concept StepPodsFact = requires {
  { T::steps_have_own_pods() } -> std::same_as<bool>;
};
template <class T>
concept StepSecretEnvFact = requires {
  { T::steps_read_secrets() } -> std::same_as<bool>;
};
template <class T>
concept AddonFact = requires {
  { T::addon() } -> std::same_as<std::string_view>;
};

template <class T>
concept EngineFacts = Named<T> && LeadFact<T> && AddedContainersFact<T> && LeadUsesApiFact<T> && PerJobFact<T> &&
                      WorkersAutoscaleFact<T> && StepPodsFact<T> && StepSecretEnvFact<T> && AddonFact<T>;

/// Step kind facts.
template <class T>
concept UsesTrainrtFact = requires {
  { T::uses_trainrt() } -> std::same_as<bool>;
};
template <class T>
concept RendezvousPortFact = requires(const T& k) {
  { k.rendezvous_port() } -> std::same_as<int>;
};
template <class T>
concept StoreLocsFact = requires(const T& k) {
  { k.store_locs() } -> std::same_as<std::vector<const StoreLoc*>>;
};
template <class T>
concept StoreReadsFact = requires(const T& k) {
  { k.store_reads() } -> std::same_as<std::vector<const StoreLoc*>>;
};
template <class T>
concept CommandLineFact = requires(const T& k) {
  { k.command_line() } -> std::same_as<const std::vector<std::string>*>;
};
template <class T>
concept ShardsFact = requires(const T& k) {
  { k.shard_count() } -> std::same_as<std::optional<int>>;
};
template <class T>
concept TrackerFact = requires {
  { T::runs_tracker() } -> std::same_as<bool>;
};
template <class T>
concept PreflightFact = requires {
  { T::gpu_preflight() } -> std::same_as<bool>;
};

template <class T>
concept ProgramFact = requires(const T& k) {
  { k.program() } -> std::same_as<std::string>;
};

template <class T>
concept StepFacts = Named<T> && UsesTrainrtFact<T> && RendezvousPortFact<T> && StoreLocsFact<T> && StoreReadsFact<T> &&
                    UserWordsFact<T> &&
                    CommandLineFact<T> && ShardsFact<T> && TrackerFact<T> && PreflightFact<T> && ProgramFact<T>;

// ---- the checks --------------------------------------------------------------------------------
// Instantiating Check<T> asserts each fact of T on its own line, with a message naming it.

/// Whether Check<T> holds for every alternative of Variant; instantiates each Check<T>, so every
/// alternative's missing facts are reported, not only the first alternative's.
template <class Variant, template <class> class Check>
inline constexpr bool every_alternative = false;
template <class... Ts, template <class> class Check>
inline constexpr bool every_alternative<std::variant<Ts...>, Check> = ((sizeof(Check<Ts>) > 0) && ...) &&
                                                                       (Check<Ts>::value && ...);

template <class T>
struct CheckServerFacts {
  static_assert(Named<T>, "server kind lacks its name: static constexpr std::string_view kName");
  static_assert(ServerPortsFact<T>, "server kind lacks its ports: static std::vector<ServerPort> ports()");
  static_assert(ServerArgvFact<T>, "server kind lacks its command line: std::vector<std::string> argv() const");
  static_assert(ServerProbesFact<T>, "server kind lacks its probe paths: static ServerProbes probes()");
  static_assert(GatewayRoutesFact<T>, "server kind lacks its gateway routes: static GatewayRoutes routes()");
  static_assert(ScalingMetricFact<T>,
                "server kind lacks its autoscaling metric: static ScalingMetric scaling_metric()");
  static_assert(MetricsEndpointFact<T>, "server kind lacks its metrics endpoint: static MetricsEndpoint metrics()");
  static_assert(ReservedFlagsFact<T>,
                "server kind lacks its reserved flags: static std::vector<std::string_view> reserved_flags()");
  static_assert(AcceptedRisksFact<T>, "server kind lacks the risky flags it takes: std::vector<AcceptedRisk> "
                                      "accepted_risks() const");
  static_assert(ServerStoreRefsFact<T>,
                "server kind lacks its store references: std::vector<const StoreRef*> store_refs() const");
  static_assert(UserWordsFact<T>,
                "server kind lacks the words the secret scan reads: std::vector<UserWords> user_words() const");
  static_assert(HealthChecksFact<T>,
                "server kind lacks its health checks: std::vector<HealthCheck> health_checks() const");
  static_assert(StoreContentsFact<T>, "server kind lacks what it reads from its stores: std::vector<StoreContents> "
                                      "store_contents() const");
  static_assert(CallingExamplesFact<T>, "server kind lacks its calling examples: CallingExamples "
                                        "calling_examples(const std::string& image) const");
  static_assert(ModelMemoryFact<T>, "server kind lacks what its model needs of the GPUs' memory: ModelMemory "
                                    "model_memory() const");
  static constexpr bool value = ServerFacts<T>;
};

template <class T>
struct CheckEngineFacts {
  static_assert(Named<T>, "engine lacks its name: static constexpr std::string_view kName");
  static_assert(LeadFact<T>, "engine lacks its lead pod group: static constexpr std::string_view kLead and "
                             "const PodGroup& lead() const");
  static_assert(AddedContainersFact<T>, "engine lacks the containers its operator adds: std::vector<AddedContainer> "
                                        "added_containers(const std::vector<PodGroup>& workers) const");
  static_assert(LeadUsesApiFact<T>, "engine lacks whether its lead talks to the Kubernetes API: bool "
                                    "lead_uses_api(const std::vector<PodGroup>& workers) const");
  static_assert(PerJobFact<T>, "engine lacks whether each job brings its own cluster: bool per_job_cluster() const");
  static_assert(WorkersAutoscaleFact<T>,
                "engine lacks whether its worker groups autoscale: static bool workers_autoscale()");
  static_assert(StepPodsFact<T>,
                "engine lacks whether a step on it has pods of its own: static bool steps_have_own_pods()");
  static_assert(StepSecretEnvFact<T>,
                "engine lacks whether a step on it may read env from Secrets: static bool steps_read_secrets()");
  static_assert(AddonFact<T>, "engine lacks the add-on trainc installs for it: static std::string_view addon()");
  static constexpr bool value = EngineFacts<T>;
};

template <class T>
struct CheckStepFacts {
  static_assert(Named<T>, "step kind lacks its name: static constexpr std::string_view kName");
  static_assert(UsesTrainrtFact<T>, "step kind lacks whether it runs trainrt: static bool uses_trainrt()");
  static_assert(RendezvousPortFact<T>, "step kind lacks its rendezvous port: int rendezvous_port() const");
  static_assert(StoreLocsFact<T>,
                "step kind lacks its store locations: std::vector<const StoreLoc*> store_locs() const");
  static_assert(StoreReadsFact<T>, "step kind lacks which of its store locations it reads (the rest it writes): "
                                   "std::vector<const StoreLoc*> store_reads() const");
  static_assert(UserWordsFact<T>,
                "step kind lacks the words the secret scan reads: std::vector<UserWords> user_words() const");
  static_assert(CommandLineFact<T>, "step kind lacks the command line a launcher runs: const "
                                    "std::vector<std::string>* command_line() const");
  static_assert(ShardsFact<T>, "step kind lacks the shards it writes: std::optional<int> shard_count() const");
  static_assert(TrackerFact<T>, "step kind lacks whether rank 0 runs a tracker: static bool runs_tracker()");
  static_assert(PreflightFact<T>,
                "step kind lacks whether its GPUs are checked before it runs: static bool gpu_preflight()");
  static_assert(ProgramFact<T>, "step kind lacks the program its pod launches: std::string program() const");
  static constexpr bool value = StepFacts<T>;
};

}  // namespace trainc
