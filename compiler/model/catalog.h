#pragma once
// The hardware catalog (stdlib/catalog.yaml, embedded): machine types, their GPUs or TPU chips,
// vCPUs and memory, GKE's node reserve and injected sidecars. Every pool field, pod resource,
// node selector and Terraform accelerator trainc emits is derived from one row here.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trainc {

struct MachineType {
  std::string type, family;  ///< family: the gpuFamilies id, "tpu-<generation>", or the prefix (n1, e2, ...)
  int vcpus = 0;
  double memory_gib = 0;
  bool shared_core = false;
  // Built-in GPUs (accelerator-optimized families):
  int gpus = 0;
  std::string accelerator;  ///< gke-accelerator label, "" without built-in GPUs
  bool arm = false, rdma = false;
  double gpu_memory_gib = 0;  ///< per built-in GPU (catalog gpuMemoryGiB); 0 = unknown
  bool topology_labels = false;  ///< GKE labels its nodes with their block, sub-block and host (catalog `topology`)
  /// How Compute Engine offers the machine (catalog gpuFamilies `capacity`: reservation, queued,
  /// flex-start, spot, standard); empty = every way. With the row's source in capacity_source.
  std::vector<std::string> capacity;
  std::string capacity_source;
  // TPU machines:
  int tpu_chips = 0;
  std::string tpu_generation, tpu_accelerator;
  int tpu_dims = 0;
  std::vector<std::string> tpu_topologies;
  std::string source;
};

/// GPUs that can be attached to general-purpose machines (T4 on N1).
struct AttachableGpu {
  std::string accelerator, machine_family;
  std::map<int, int> max_vcpus;  ///< allowed GPU count -> most vCPUs the machine may have
  double memory_gib = 0;         ///< per GPU (catalog gpuMemoryGiB); 0 = unknown
};

/// What the check that a server's model fits its GPUs assumes of a server kind (catalog
/// servers.<kind>.memory).
struct ServerMemory {
  double utilization = 0;   ///< the share of each GPU's memory the server takes
  double kv_floor_gib = 0;  ///< the least KV cache per GPU beside the weights
  std::vector<std::string> unsupported;  ///< gke-accelerator labels the server cannot run on
};

struct ReserveTier {
  double up_to = 0;  ///< 0 = no upper bound
  double fraction = 0;
};

struct Sidecar {
  std::string cpu, memory, ephemeral_storage;
  std::string pod_security = "restricted";  ///< the Pod Security level the injected container meets
  double cores = 0, bytes = 0;  ///< cpu and memory as numbers, parsed once with the catalog
};

/// What a node of one configuration runs before trainc's pods: the DaemonSets of the catalog's
/// `daemonSets` whose conditions hold, and the margin for those it does not know.
struct NodeConfig {
  bool gpu = false, tpu = false;
  bool dataplane_v2 = false;        ///< ADVANCED_DATAPATH (systems with RDMA pools): anetd, not kube-proxy
  bool managed_prometheus = false;  ///< systems with services
  bool rdma = false;                ///< trainc's gIB installer runs on the node
};
struct NodeReserve {
  double cores = 0, bytes = 0;  ///< the DaemonSets' requests plus the margin
  double margin_cores = 0, margin_bytes = 0;
  std::vector<std::string> daemonsets;  ///< namespace/name of each
};

/// A Deployment that is not per node but needs room on the cluster's untainted nodes: GKE's own
/// (kube-dns, ...) and the operators trainc installs (catalog `systemPods`).
struct SystemPod {
  std::string name;  ///< namespace/name
  int replicas = 1;
  std::vector<std::string> when;  ///< conditions, all of which must hold
  double cores = 0, bytes = 0;    ///< one pod's requests
};

/// A Kubernetes operator trainc installs with helm, pinned.
struct Operator {
  std::string chart, repo, version, release, ns;
};

/// A manifest trainc applies with kubectl, pinned to a commit: the Custom Metrics Stackdriver
/// Adapter, which serves Managed Prometheus metrics to HorizontalPodAutoscalers.
struct Manifest {
  std::string url, ns, service_account;
};

/// Kueue's configuration as the pinned release ships it, and where the controller reads it
/// (`operators.kueue` in the catalog): apply.sh replaces it (k8s/queue.h kueue_configuration).
struct KueueConfig {
  std::string deployment;  ///< the controller's Deployment, in the manifest's namespace
  std::string config_map;  ///< the ConfigMap the controller mounts its configuration from
  std::string key;         ///< the ConfigMap key holding the Configuration
  std::string defaults;    ///< the release's Configuration (YAML text), its comments left out
  int backoff_base_seconds = 0, backoff_max_seconds = 0;  ///< Kueue's requeuing back-off defaults
};

/// GKE's queued provisioning (Dynamic Workload Scheduler) as Kueue asks for it (catalog
/// `queuedProvisioning`): the ProvisioningRequest class, the node label the pods are sent to the
/// request's nodes by (filled from the class detail), and the taint on those nodes.
struct QueuedProvisioning {
  std::string class_name, node_label, class_detail, taint, source;
};

/// The actions (owner/name@ref), images and versions generated CI pipelines use.
struct CiTools {
  std::string checkout, auth, setup_gcloud, gke_credentials, setup_terraform;
  std::string terraform_version, cloud_sdk_image, terraform_image, docker_image, helm_version;
  /// timeout-minutes of each generated GitHub Actions job, by job name.
  std::map<std::string, int> job_minutes;
};

/// How trainc lays out the RDMA VPC of A4 / A3 Ultra pools.
struct RdmaLayout {
  std::string network_profile;  ///< suffix after "<zone>-"
  int mtu = 0;
  std::string subnet_range;     ///< e.g. 192.168.128.0/18, split into one subnet per NIC
  int subnet_prefix = 0;        ///< each NIC's subnet, e.g. /21
  std::string gib_image, gib_arm_suffix, pause_image;  ///< the gIB NCCL plugin installer
  std::string gib_cpu;  ///< what the installer's pod requests (its DaemonSet, and every RDMA node's reserve)
  std::string nccl_env_script;  ///< sourced before the first NCCL user in every pod on an RDMA pool
  /// The second gVNIC NIC (eth1) of RDMA nodes: a regular VPC with one subnet, the GKE network pods name.
  std::string gvnic_network, gvnic_range;
  int gvnic_mtu = 0;
  /// The CIDR of NIC `i`'s subnet: subnet_range split into /subnet_prefix blocks.
  std::string subnet_cidr(int i) const;
};

/// One level of GKE's node topology: the name a spec's `placement.level` uses and the node label.
struct TopologyLevel {
  std::string name, label;
};

/// Kueue Topology-Aware Scheduling on GKE (catalog `topology`).
struct TopologyModel {
  std::vector<TopologyLevel> levels;  ///< widest first, kubernetes.io/hostname last
  std::string default_level;          ///< what multi-pod workloads on a labelled pool ask for by default
  bool default_required = false;
  std::vector<std::string> machines;  ///< the machine types GKE labels
  const TopologyLevel* level(const std::string& name) const;
  /// The level names a spec may ask for: all but the last (the node itself).
  std::vector<std::string> placement_levels() const;
};

class Catalog {
 public:
  /// Parses catalog YAML; throws std::runtime_error naming the row on malformed data.
  static Catalog parse(const std::string& yaml_text);

  const MachineType* machine(const std::string& type) const;
  const AttachableGpu* attachable(const std::string& accelerator) const;
  std::vector<std::string> machine_names() const;
  const std::vector<AttachableGpu>& attachable_gpus() const { return attachable_; }
  const Sidecar& gcsfuse_sidecar() const { return gcsfuse_; }
  /// The KubeRay operator that runs RayClusters and RayJobs.
  const Operator& kuberay() const { return kuberay_; }
  const RdmaLayout& rdma() const { return rdma_; }
  const TopologyModel& topology() const { return topology_; }
  /// Istio's charts: CRDs (base), the control plane (istiod) and the ingress gateway.
  const Operator& istio_base() const { return istio_base_; }
  const Operator& istiod() const { return istiod_; }
  const Operator& istio_gateway() const { return istio_gateway_; }
  /// What Istio's injected sidecar requests, which a pod's own requests must leave room for.
  const Sidecar& istio_proxy() const { return istio_proxy_; }
  /// Istio's init container, which needs NET_ADMIN and NET_RAW without the Istio CNI.
  const Sidecar& istio_init() const { return istio_init_; }
  /// What a pod without accelerators asks for when its spec gives no resources (podDefaults.cpuPod).
  const Sidecar& cpu_pod() const { return cpu_pod_; }
  /// What a whole-node pod (or a GPU pod's share of a node) leaves beyond the modelled reserve,
  /// for pods the model does not know and the autoscaler's node template (podDefaults.wholeNodeSlack).
  const Sidecar& whole_node_slack() const { return whole_node_slack_; }
  /// Time for a node to come up and the image to be pulled, beyond a Deployment's startup window.
  int pull_margin_seconds() const { return pull_margin_seconds_; }
  const Manifest& metrics_adapter() const { return metrics_adapter_; }
  /// The JobSet controller, which runs TPU steps.
  const Manifest& jobset() const { return jobset_; }
  /// Kueue, which admits batch workloads by quota.
  const Manifest& kueue() const { return kueue_; }
  const KueueConfig& kueue_config() const { return kueue_config_; }
  const QueuedProvisioning& queued_provisioning() const { return queued_provisioning_; }
  /// The port slices of a multislice TPU step coordinate on (MEGASCALE_PORT).
  int megascale_port() const { return megascale_port_; }
  /// What generated CI pipelines run (`ci:` in the catalog).
  const CiTools& ci() const { return ci_; }
  /// Why a spec may not deploy into namespace `ns` (the cluster's own, or an operator's that
  /// trainc installs); "" when it may.
  std::string system_namespace(const std::string& ns) const;
  /// The pinned image of a server kind ("triton"); throws for a kind the catalog lacks.
  const std::string& server_image(const std::string& kind) const;
  /// What a server kind takes of its GPUs' memory; nullptr when the catalog says nothing of it.
  const ServerMemory* server_memory(const std::string& kind) const;
  /// Memory per GPU of a gke-accelerator label, built in or attachable; 0 when unknown.
  double gpu_memory_gib(const std::string& accelerator) const;

  /// Cores a node of `m` leaves for pods after GKE's reserve.
  double allocatable_cpu(const MachineType& m) const;
  /// Bytes a node of `m` leaves for pods after GKE's reserve and the eviction threshold.
  double allocatable_memory(const MachineType& m) const;
  /// Pods a node runs at most, its DaemonSets' included (GKE's maximum pods per node).
  int pods_per_node() const { return pods_per_node_; }
  /// What the DaemonSets on a node of configuration `c` request, with the margin.
  NodeReserve node_reserve(const NodeConfig& c) const;
  /// The system's Deployments that land on untainted nodes, each with its conditions.
  const std::vector<SystemPod>& system_pods() const { return system_pods_; }

 private:
  std::map<std::string, MachineType> machines_;
  std::vector<AttachableGpu> attachable_;
  std::map<std::string, ServerMemory> server_memory_;
  std::vector<ReserveTier> memory_tiers_, cpu_tiers_;
  double eviction_mib_ = 0;
  int pods_per_node_ = 0;
  struct DaemonSet {
    std::string name;
    std::vector<std::string> when;
    double cores = 0, bytes = 0;
  };
  std::vector<DaemonSet> daemonsets_;
  std::vector<SystemPod> system_pods_;
  double margin_cores_ = 0, margin_bytes_ = 0;
  Sidecar gcsfuse_;
  Operator kuberay_, istio_base_, istiod_, istio_gateway_;
  Sidecar istio_proxy_, istio_init_;
  Sidecar cpu_pod_, whole_node_slack_;
  int pull_margin_seconds_ = 0;
  Manifest metrics_adapter_, jobset_, kueue_;
  KueueConfig kueue_config_;
  QueuedProvisioning queued_provisioning_;
  int megascale_port_ = 0;
  std::vector<std::string> system_ns_prefixes_;
  std::map<std::string, std::string> server_images_;
  RdmaLayout rdma_;
  TopologyModel topology_;
  CiTools ci_;
};

/// The embedded catalog, parsed once.
const Catalog& catalog();

/// TPU slice geometry: the number of chips in a topology such as "2x2x4"; 0 when malformed.
int topology_chips(const std::string& topology);
/// The number of dimensions of a topology ("2x4" -> 2).
int topology_dims(const std::string& topology);

}  // namespace trainc
