#pragma once
// The typed model (trainc's IR): what lowering makes of a validated spec, with every default
// applied and every reference resolved. Each node keeps `ptr`, the JSON pointer of the spec value
// it came from, so later phases can report at the user's line.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/pool_parts.h"
#include "model/catalog.h"
#include "model/failure.h"
#include "model/schedule.h"
#include "model/startup.h"
#include "model/kinds/facts.h"

namespace trainc {

using StringMap = std::map<std::string, std::string>;

/// Where the cloud side lives. Present only when the spec has `gcp:`; without it trainc emits no
/// Terraform or gcloud scripts and assumes an existing cluster.
/// Terraform's remote state (`backend "gcs"`).
struct TerraformState {
  std::string bucket, prefix;
};

/// A VPC network and subnet for a VPC-native cluster, with named secondary ranges.
struct Network {
  std::string name, subnet;
  std::string cidr = "10.0.0.0/20", pods = "10.4.0.0/14", services = "10.8.0.0/20";
  bool create = true;  ///< trainc creates (and deletes) the network and subnet
  std::string ptr;
  std::string pods_range() const { return subnet + "-pods"; }
  std::string services_range() const { return subnet + "-services"; }
};

/// The Artifact Registry Docker repository built images are pushed to.
struct Registry {
  std::string repository, location;
  bool create = true;
  std::string ptr;
  std::string host() const { return location + "-docker.pkg.dev"; }
};

struct Gcp {
  std::string project, region, zone;  ///< zone "" = a regional cluster
  std::string ptr;
  std::optional<TerraformState> state;
  std::optional<Network> network;
  std::optional<Registry> registry;  ///< set when the spec names one or any image is built
  std::string location() const { return zone.empty() ? region : zone; }
  /// Where a built image named `name` lives, without its tag.
  std::string image_path(const std::string& name) const;
};

/// An image trainc's outputs build: from the user's Dockerfile, or from a Dockerfile trainc
/// generates (pinned base, requirements installed at build time, files copied, non-root user).
struct Build {
  std::string name;          ///< the workload it is for, and the image's name in the registry
  std::string of;            ///< "step", "cluster" or "service"
  std::string context;       ///< relative to the spec's folder, normalised ("." = the folder)
  std::string dockerfile;    ///< the user's Dockerfile, relative to the context; "" = generated
  std::string base;          ///< generated: the FROM image
  std::string requirements;  ///< generated: pip requirements file in the context ("" = none)
  std::vector<std::string> copy;  ///< generated: context paths copied into `workdir`
  std::string workdir = "/workspace";
  std::vector<std::string> writable;  ///< generated: folders outside workdir the workload writes
  std::string tag;    ///< given, or c-<16 hex digits of the build's SHA-256>
  std::string image;  ///< the full reference the manifests use
  std::string ptr;
  bool generated() const { return dockerfile.empty(); }
  /// The Dockerfile's path in the output folder (docker/<name>.Dockerfile) when generated.
  std::string output_dockerfile() const { return "docker/" + name + ".Dockerfile"; }
};

/// GitHub Actions: a workflow that checks pull requests and deploys pushes to `branch`.
struct GithubCi {
  std::string provider;         ///< Workload Identity Federation provider (full name)
  std::string service_account;  ///< the Google service account it impersonates
  std::string plan_service_account;  ///< read-only, for pull requests' plans ("" = service_account)
  std::string branch = "main";
  std::string environment;      ///< GitHub environment of the deploy job ("" = none)
  std::string trainc_image;     ///< the image CI runs trainc from
  std::string ptr;
};

/// Cloud Build: provision and destroy configs.
struct CloudBuildCi {
  std::string service_account;  ///< "" = Cloud Build's default
  int timeout_seconds = 7200;
  std::string machine_type;     ///< options.machineType enum value, "" = the default
  std::string ptr;
};

struct Ci {
  std::optional<GithubCi> github;
  std::optional<CloudBuildCi> cloudbuild;
  std::string ptr;
};

/// How Kueue's Topology-Aware Scheduling (TAS) places a pool's multi-pod workloads: spec
/// `placement`, else the catalog's default (`topology`) for a fixed-size pool on a machine GKE
/// labels with its block, sub-block and host, behind a queue.
struct TopologyPlacement {
  std::string level;      ///< a catalog level (block, subblock, host); "" = the pool has no TAS
  bool required = false;  ///< all pods in one domain at `level`, or else wait (false: prefer it)
  std::string ptr;        ///< the spec's `placement`; "" when the catalog's default applies
  /// Why a labelled pool behind a queue gets no TAS by default, as a sentence ("" otherwise).
  std::string why_none;
};

struct Pool {
  std::string name, ptr;
  std::string machine;
  std::optional<Accelerator> accelerator;  ///< from the catalog (built-in GPUs) or the spec (N1 + T4)
  std::optional<TpuSlice> tpu;
  int nodes = 1;  ///< initial size; for autoscaled pools the minimum
  std::optional<std::pair<int, int>> autoscaling;  ///< min, max nodes
  std::string provisioning = "standard";  ///< standard, spot, flex-start, queued, reservation (a ladder's first rung's)
  std::string reservation;                ///< with provisioning: reservation (its reservation_path())
  bool provisioning_set = false;          ///< the spec wrote `provisioning`
  std::vector<Rung> ladder;  ///< spec `capacity`, best rung first; empty for one provisioning (model/pool_parts.h)
  std::string ladder_of;     ///< on a rung pool (rung_pools()): the laddered pool, and its rung's index
  int rung = 0;
  bool rdma = false;                                ///< GPUDirect RDMA multi-networking (A4, A3 Ultra)
  bool topology_labels = false;  ///< GKE labels the nodes with their block, sub-block and host (catalog)
  TopologyPlacement placement;
  /// Whether the pool's Kueue flavor names the system's Topology (needs `queue`).
  bool tas() const { return !placement.level.empty(); }
  int disk_gb = 0;                                  ///< 0 = GKE's default
  StringMap labels;
  std::vector<Taint> taints;
  // From the hardware catalog:
  int vcpus = 0;
  double memory_gib = 0;
  bool arm = false;
  double allocatable_cpu = 0;        ///< cores left for pods after GKE's reserve
  double allocatable_memory = 0;     ///< bytes left for pods after GKE's reserve and eviction threshold
  /// What the DaemonSets on each node request (catalog `daemonSets`, by the pool's and the system's
  /// configuration), with the margin; set once the system's pools are known.
  NodeReserve reserve;
  /// What a node leaves for trainc's pods: allocatable less the DaemonSet reserve.
  double room_cpu() const { return allocatable_cpu - reserve.cores; }
  double room_memory() const { return allocatable_memory - reserve.bytes; }

  int max_nodes() const { return autoscaling ? autoscaling->second : nodes; }
  /// Nodes in each of the pool's GKE node pools, as Terraform and up.sh size them: flex-start
  /// pools start empty and grow on demand, a multi-host TPU slice is exactly its hosts, others are
  /// fixed or autoscaled.
  struct NodeRange {
    int min = 0, max = 0;
    bool autoscaled = false;
  };
  NodeRange node_range() const;
  /// The GKE node pools this pool stands for: its own name, <name>-0 ... <name>-<N-1> for N slices,
  /// or <name>-<suffix> per rung of its ladder.
  std::vector<std::string> node_pools() const;
  /// The pools GKE makes for this one: itself, or one per rung (model/pool_parts.h).
  std::vector<Pool> rung_pools() const;
  bool laddered() const { return !ladder.empty(); }
};

/// What one Kueue PodSet asks of Topology-Aware Scheduling (its pod template's annotations).
struct TopologyRequest {
  enum class Kind { kNone, kUnconstrained, kPreferred, kRequired };
  Kind kind = Kind::kNone;
  std::string level, label;  ///< preferred and required: the catalog level and its node label
  /// "required subblock", "preferred block", "unconstrained", or "" for none.
  std::string describe() const;
};
struct System;
/// The request of a PodSet of `pods` pods on `pool` in a queued system: none off a TAS pool (or
/// without a queue); on one, its placement when the PodSet has several pods, else unconstrained.
/// Kueue gives a TAS flavor of a queue that also has others only to PodSets that ask for TAS, so
/// every PodSet on a TAS pool asks.
/// `own`, when given, replaces the pool's placement (a step's `placement`; level "" = unconstrained).
TopologyRequest topology_request(const System& sys, const Pool* pool, int pods, const TopologyPlacement* own = nullptr);
struct Step;
/// The request of a step's one PodSet: all of its pods (every slice's), by its own placement or its
/// pool's; for a step that names no pool, unconstrained when every pool it could run on is placed
/// by topology, else nothing.
TopologyRequest topology_request(const System& sys, const Step& step);

/// What a pool holds at its largest: every node's allocatable CPU (cores) and memory (bytes), GPUs
/// and TPU chips. Kueue's quotas, and the checks against them.
struct PoolCapacity {
  double cpu = 0, memory = 0;
  long long gpus = 0, tpu_chips = 0;
};
PoolCapacity capacity(const Pool& pool);

struct PodGroup;
struct ComputeCluster;
/// What `pool` holds at its largest less what the long-lived pods placed there take at their
/// largest (services with their Istio proxy, compute clusters' heads, schedulers and workers with
/// their GCS FUSE sidecar), leaving out the pods of `except`.
PoolCapacity capacity_left(const System& sys, const Pool& pool, const PodGroup* except = nullptr);
/// What a queue may hand out on `pool`: what the pods Kueue does not admit leave of it.
PoolCapacity queue_capacity(const System& sys, const Pool& pool);
/// The most pods worker group `g` of cluster `c` can have at once: whole pods per node of its pool
/// (of any pool when it names none) by GPUs, CPU and memory, within what the other long-lived pods
/// leave there. nullopt when the system declares no pools to judge by.
std::optional<int> group_capacity(const System& sys, const ComputeCluster& c, const PodGroup& g);

/// A named store: an S3 bucket (synced with the AWS CLI) or a GCS bucket (mounted with GCS FUSE).
struct Store {
  enum class Kind { s3, gcs };
  std::string name, ptr;
  Kind kind = Kind::s3;
  std::string bucket, prefix;
  // S3
  std::string region, endpoint, credentials_secret;
  // GCS
  std::string location;    ///< bucket location; default: the gcp region
  bool versioning = false; ///< object versioning (default on where checkpoints live)
  bool create = true;      ///< trainc's Terraform and scripts create (and delete) the bucket
  bool read_only = false;  ///< the workload only reads it: objectViewer instead of objectUser
};

/// A role on one GCS bucket.
struct BucketGrant {
  std::string store;  ///< the store whose bucket it is
  std::string role;   ///< roles/storage.objectUser or roles/storage.objectViewer
};

/// A workload's identity: a Kubernetes service account bound to a Google service account
/// through Workload Identity, with roles granted on GCS buckets (never project-wide).
struct Identity {
  std::string ksa;  ///< Kubernetes service account (created by trainc)
  std::string gsa;  ///< Google service account id (the part before '@')
  std::string ptr;
  std::string of;   ///< whose it is: "" for the system's, else the service's name
  std::vector<BucketGrant> grants;
  std::string gsa_email(const Gcp& gcp) const { return gsa + "@" + gcp.project + ".iam.gserviceaccount.com"; }
  /// The Google service account's display name (Terraform and up.sh give the same).
  std::string display_name(const std::string& system) const;
  /// The description up.sh and Terraform give the account: up.sh binds Workload Identity, and
  /// down.sh deletes, only an account carrying it, never one someone else made.
  std::string description(const std::string& system) const;
};

/// An environment variable read from a key of a Kubernetes Secret (valueFrom.secretKeyRef).
struct SecretEnv {
  std::string secret, key;
};
using SecretEnvMap = std::map<std::string, SecretEnv>;

/// The Kubernetes Pod Security Standard a workload's pods meet, most to least strict.
enum class PodSecurityLevel { kRestricted, kBaseline, kPrivileged };
std::string_view level_name(PodSecurityLevel level);

struct Pool;
/// The least strict level a workload's pods need, and why, in a sentence that follows "its pods".
struct SecurityNeed {
  PodSecurityLevel level = PodSecurityLevel::kRestricted;
  std::string why;
};
/// What pods placed on `pool` need: on an RDMA pool they mount the host's NVIDIA driver and gIB
/// plugin (hostPath: privileged); over the host network (TPU multislice: privileged); on a TPU pool
/// they open the TPU devices as root (baseline).
SecurityNeed security_need(const Pool* pool, bool host_network);
struct System;
struct ComputeCluster;
/// What a compute cluster's pods need: the most any of its pod groups needs on its pool.
SecurityNeed security_need(const System& sys, const ComputeCluster& c);

/// `security:` of a step, compute cluster or service.
struct PodSecurity {
  PodSecurityLevel level = PodSecurityLevel::kRestricted;
  std::string reason;            ///< why a less strict level; "" at restricted
  std::optional<int> run_as;     ///< restricted: the UID the spec gave; else the image's own
  std::string ptr;               ///< the `security` node; "" when the spec has none
  bool restricted() const { return level == PodSecurityLevel::kRestricted; }
};

/// A GCS bucket mounted into a step's pods through the GCS FUSE CSI driver.
struct Mount {
  std::string store, path;  ///< store name; absolute path in the pod
  std::string bucket;       ///< resolved
  std::string only_dir;     ///< the store's prefix, mounted alone ("" = whole bucket)
  bool read_only = false;
  std::string ptr;
};

/// "<store>:/path" resolved against the store: `url` is the full s3:// address.
struct StoreRef {
  std::string store, path, url, ptr;
};
struct Sync {
  StoreRef from;
  std::string to;  ///< absolute path in the pod
  std::string ptr;
};

struct Outputs {
  std::string path;  ///< absolute path in the pod
  StoreRef to;
  int every_seconds = 600;
  std::string ptr;
  bool log = true;  ///< the step's log is copied into `path` before each sync, and so uploaded with it
};

struct Checkpoints {
  std::string path;  ///< absolute path in the pod, inside outputs.path
  std::string pattern = "*";
  std::string resume_flag;
  /// resumeFrom: previous: a new run continues from whatever the store holds; else a run resumes only
  /// what it wrote since it first started (its .trainc-run-<id> marker), or else `start_from` (a file).
  bool resume_previous = false;
  std::string start_from;  ///< resumeFrom: <file>: absolute pod path, inside an input or a mount
  std::string ptr;
  std::optional<int> every_seconds, cost_seconds;  ///< the interval and one write's time (model/goodput.h)
};

// ---- what a step runs: one alternative of StepKind -----------------------------------------
// Each alternative names itself (`kName`: the spec key, the component label) and provides the
// facts of StepFacts (model/kinds/facts.h), which passes read instead of asking for the kind.
// Passes whose behaviour differs by kind dispatch with match() from base/overloaded.h, one
// handler per alternative, so a new alternative that a pass forgot is a compile error
// (docs/design.md, "Adding a workload kind").

/// A place in a store that trainrt steps read or write: GCS stores are mounted at
/// /mnt/stores/<store>, so `pod_path` is where the data appears in the pod.
struct StoreLoc {
  std::string store, path, pod_path, ptr;
};

/// torchrun with a static rendezvous: rank 0's pod hosts the store.
struct Torchrun {
  static constexpr std::string_view kName = "torchrun";
  std::string script;  ///< absolute path in the pod
  std::vector<std::string> args;
  int port = 29500;

  static bool uses_trainrt() { return false; }
  int rendezvous_port() const { return port; }
  std::vector<const StoreLoc*> store_locs() const { return {}; }
  std::vector<const StoreLoc*> store_reads() const { return {}; }
  std::vector<UserWords> user_words() const { return {{&args, "args"}}; }
  const std::vector<std::string>* command_line() const { return nullptr; }
  std::optional<int> shard_count() const { return std::nullopt; }
  static bool runs_tracker() { return false; }
  static bool gpu_preflight() { return false; }
  std::string program() const { return "torchrun"; }
};

/// The port trainrt's XGBoost tracker and user launchers meet on: torchrun's default.
inline constexpr int kDefaultRendezvousPort = 29500;

/// Any program of the user's image, run as given.
struct Command {
  static constexpr std::string_view kName = "command";
  std::vector<std::string> argv;

  static bool uses_trainrt() { return false; }
  int rendezvous_port() const { return kDefaultRendezvousPort; }
  std::vector<const StoreLoc*> store_locs() const { return {}; }
  std::vector<const StoreLoc*> store_reads() const { return {}; }
  std::vector<UserWords> user_words() const { return {{&argv, ""}}; }
  /// What a RayJob submits, or a Dask client runs.
  const std::vector<std::string>* command_line() const { return &argv; }
  std::optional<int> shard_count() const { return std::nullopt; }
  static bool runs_tracker() { return false; }
  static bool gpu_preflight() { return false; }
  std::string program() const { return argv.empty() ? std::string() : argv.front(); }
};

/// A trainrt datagen step: make_classification / make_regression semantics.
struct Datagen {
  static constexpr std::string_view kName = "datagen";
  long long rows = 0;  ///< given, or resolved from `size` (bytes of float32 features + label)
  std::string size;    ///< "6TB" when the spec gave a size; kept for the model dump
  int features = 0, informative = 2, redundant = 2, repeated = 0, classes = 2, clusters_per_class = 2;
  double class_sep = 1.0, flip_y = 0.01;
  bool hypercube = true;
  std::vector<double> weights;
  std::string task = "classification", format = "native";
  int shards = 0;  ///< default: one per pod
  long long seed = 0;
  StoreLoc to;

  static bool uses_trainrt() { return true; }
  int rendezvous_port() const { return kDefaultRendezvousPort; }
  std::vector<const StoreLoc*> store_locs() const { return {&to}; }
  std::vector<const StoreLoc*> store_reads() const { return {}; }
  std::vector<UserWords> user_words() const { return {}; }
  const std::vector<std::string>* command_line() const { return nullptr; }
  /// Pod i of a multi-node step makes shards i, i+nodes, ...
  std::optional<int> shard_count() const { return shards; }
  static bool runs_tracker() { return false; }
  static bool gpu_preflight() { return false; }
  std::string program() const { return "trainrt"; }
};

/// A trainrt XGBoost training step.
struct XGBoost {
  static constexpr std::string_view kName = "xgboost";
  StoreLoc from, to;
  int rounds = 0, checkpoint_every = 100;
  StringMap params;  ///< tree_method=hist and, on GPUs, device=cuda unless the spec sets them

  static bool uses_trainrt() { return true; }
  int rendezvous_port() const { return kDefaultRendezvousPort; }
  std::vector<const StoreLoc*> store_locs() const { return {&from, &to}; }
  std::vector<const StoreLoc*> store_reads() const { return {&from}; }
  std::vector<UserWords> user_words() const { return {}; }
  const std::vector<std::string>* command_line() const { return nullptr; }
  std::optional<int> shard_count() const { return std::nullopt; }
  /// A multi-node step's rank 0 also runs XGBoost's tracker, which every rank connects to.
  static bool runs_tracker() { return true; }
  /// A bad GPU or a rank that cannot reach the others fails in seconds, not hours into training.
  static bool gpu_preflight() { return true; }
  std::string program() const { return "trainrt"; }
};

/// What a step runs: exactly one of these, filled by lowering.
using StepKind = std::variant<Torchrun, Command, Datagen, XGBoost>;
static_assert(every_alternative<StepKind, CheckStepFacts>);

/// The port ranks of a multi-node step meet on.
int rendezvous_port(const StepKind& kind);
/// The store places a trainrt step reads or writes, in flag order (none for user images).
std::vector<const StoreLoc*> store_locs(const StepKind& kind);
/// Those of store_locs() it reads; it writes the others.
std::vector<const StoreLoc*> store_reads(const StepKind& kind);
/// The words of the user's command line, with their data paths below the kind's key.
std::vector<UserWords> user_words(const StepKind& kind);

struct Resources {
  StringMap requests, limits;  ///< cpu, memory, ... as Kubernetes quantities
  /// The request for `key` as a number (cores, bytes); 0 when there is none.
  double requested(const std::string& key) const;
};

struct Step {
  std::string name, ptr;
  std::vector<std::string> needs;
  std::string image, image_pull_policy = "IfNotPresent";
  std::string pool;     ///< "" when the step names no pool
  std::string cluster;  ///< the compute cluster it runs on; "" for none
  int nodes = 1, gpus = 0, procs_per_node = 1;
  int slices = 1;  ///< TPU steps: slices the step spans (a JobSet replicated Job each); nodes is per slice
  std::string workdir = "/workspace";
  StepKind run;
  StringMap env;
  SecretEnvMap secret_env;  ///< env from Secrets (`{secretRef: ...}`)
  Resources resources;
  std::string shm;
  int retries = 2;
  std::vector<int> no_retry_exit_codes;  ///< end the step at once (model/failure.h); sorted, kPreflightExit in it
  int history = 3;  ///< runs of the step apply.sh keeps on the cluster, the current one included
  std::optional<int> timeout_seconds;
  Heartbeat heartbeat;
  std::vector<Sync> inputs;
  std::vector<Mount> mounts;
  std::optional<Outputs> outputs;
  std::optional<Checkpoints> checkpoints;
  StringMap labels, annotations;
  PodSecurity security;
  std::optional<TopologyPlacement> placement;  ///< `placement`: replaces its pool's topology-aware one
  std::optional<Schedule> schedule;  ///< a CronJob makes its Jobs (`schedule`)
  std::string run_id;  ///< the current run: a hash of what decides its work (emit/runs.h); "" before

  bool distributed() const { return nodes > 1; }
  bool gang() const;  ///< pods that work together (not independent shards): they fail and restart as one
  bool multislice() const { return slices > 1; }  ///< TPU slices that meet over the data-center network
  /// Runs the trainrt runtime image (datagen or xgboost) rather than a user image.
  bool uses_trainrt() const;
  /// The alternative's kName: the component label and what the script runs.
  std::string kind() const;
  // The step kind's facts (StepFacts in model/kinds/facts.h).
  const std::vector<std::string>* command_line() const;  ///< what a launcher runs; nullptr = not a command
  std::optional<int> shard_count() const;
  bool runs_tracker() const;
  bool gpu_preflight() const;
  /// The program the pod launches (torchrun, a command's first word, trainrt); "" for none.
  std::string program() const;
  /// The pod launches torchrun (a torchrun step, or a command that runs it): what its exit code, its
  /// processes and its NCCL settings mean, and the python with torch it needs, follow from that.
  bool runs_torchrun() const { return program() == "torchrun"; }
  /// The run as `T`, or nullptr when the step runs something else.
  template <class T>
  const T* as() const { return std::get_if<T>(&run); }
};

// ---- long-lived compute clusters (`clusters:`): one alternative of Engine ----------------------

/// Identical pods of a compute cluster on one pool; CPU, memory and GPUs default from the pool.
struct PodGroup {
  std::string name, ptr;
  std::string pool;  ///< "" = no placement constraint
  int replicas = 1, min = 1, max = 1;
  int gpus = 0;
  Resources resources;  ///< requests and limits, with the pool's defaults applied
  bool whole_node = false;  ///< resources default to the room its pool's node leaves (Lowerer::size_whole_nodes)
  std::string shm;
  bool autoscaled() const { return min < max; }
};

/// A KubeRay RayCluster: the head and one worker group per `workers` entry.
struct Ray {
  static constexpr std::string_view kName = "ray";
  std::string version;  ///< rayVersion, from the spec or the image tag
  PodGroup head;
  bool per_job = false;             ///< each RayJob brings its own cluster, deleted when it finishes
  int ttl_after_finished = 600;     ///< seconds a per-job cluster outlives its job

  // Facts (model/kinds/ray.cpp).
  static constexpr std::string_view kLead = "head";
  const PodGroup& lead() const { return head; }
  PodGroup& lead() { return head; }
  std::vector<AddedContainer> added_containers(const std::vector<PodGroup>& workers) const;
  bool lead_uses_api(const std::vector<PodGroup>& workers) const;
  bool per_job_cluster() const { return per_job; }
  static bool workers_autoscale() { return true; }
  /// RayClusters and RayJobs need the KubeRay operator (catalog operators.kuberay, systemPods).
  static std::string_view addon() { return "kuberay"; }
  /// A step on a Ray cluster is a RayJob: it runs in the cluster's pods.
  static bool steps_have_own_pods() { return false; }
  /// A RayJob's env travels in its runtimeEnvYAML, which cannot read a Secret.
  static bool steps_read_secrets() { return false; }
};

/// A Dask scheduler (Deployment + Service) and one worker Deployment per `workers` entry.
struct Dask {
  static constexpr std::string_view kName = "dask";
  PodGroup scheduler;
  int threads = 0;            ///< --nthreads; 0 = derived per group
  std::string rmm_pool_size;  ///< dask cuda worker --rmm-pool-size; "" = none

  // Facts (model/kinds/dask.cpp).
  static constexpr std::string_view kLead = "scheduler";
  const PodGroup& lead() const { return scheduler; }
  PodGroup& lead() { return scheduler; }
  std::vector<AddedContainer> added_containers(const std::vector<PodGroup>&) const { return {}; }
  bool lead_uses_api(const std::vector<PodGroup>&) const { return false; }
  bool per_job_cluster() const { return false; }
  static bool workers_autoscale() { return false; }
  /// Plain Deployments: no operator.
  static std::string_view addon() { return ""; }
  /// A step on a Dask cluster is a client in a Job of its own.
  static bool steps_have_own_pods() { return true; }
  static bool steps_read_secrets() { return true; }
};

using Engine = std::variant<Ray, Dask>;
static_assert(every_alternative<Engine, CheckEngineFacts>);

struct ComputeCluster {
  std::string name, ptr;
  std::string image, image_pull_policy = "IfNotPresent";
  Engine engine;
  std::vector<PodGroup> workers;  ///< in name order
  StringMap env, labels;
  SecretEnvMap secret_env;  ///< env from Secrets (`{secretRef: ...}`)
  std::vector<Mount> mounts;
  PodSecurity security;
  std::string kind() const;  ///< the engine's kName
  template <class T>
  const T* as() const { return std::get_if<T>(&engine); }
  /// The engine's lead pod group: Ray's head, Dask's scheduler.
  const PodGroup& lead() const;
  /// The lead's name among the pod groups ("head", "scheduler"), also its spec key.
  std::string_view lead_name() const;
  /// Whether the lead talks to the Kubernetes API, and so keeps its service account's token: Ray's
  /// in-tree autoscaler, which runs beside the head when a worker group autoscales.
  bool head_uses_api() const;
  /// The containers the engine's operator adds to the cluster's pods, beside trainc's own.
  std::vector<AddedContainer> added_containers() const;
  /// Each job brings its own cluster, deleted when it finishes (no object of the cluster's own).
  bool per_job() const;
  bool workers_autoscale() const;
  bool steps_have_own_pods() const;
  bool steps_read_secrets() const;
  std::string_view addon() const;
};

// ---- long-running servers (`services:`): one alternative of ServerKind -------------------------

/// NVIDIA Triton Inference Server, reading its model repository from GCS.
struct Triton {
  static constexpr std::string_view kName = "triton";
  StoreRef repository;              ///< `url` is gs://bucket/prefix/path
  std::vector<std::string> models;  ///< checked ready by the health check
  std::vector<std::string> args;    ///< further tritonserver flags
  std::optional<ContentSource> source;  ///< what the scripts upload into the repository

  // Facts (model/kinds/triton.cpp).
  static std::vector<ServerPort> ports();
  std::vector<std::string> argv() const;
  static ServerProbes probes();
  static GatewayRoutes routes();
  static ScalingMetric scaling_metric();
  static MetricsEndpoint metrics();
  static std::vector<std::string_view> reserved_flags();
  std::vector<const StoreRef*> store_refs() const { return {&repository}; }
  std::vector<UserWords> user_words() const { return {{&args, "args"}}; }
  std::vector<HealthCheck> health_checks() const;
  std::vector<StoreContents> store_contents() const;
  /// Triton's flags carry no risk its docs single out.
  std::vector<AcceptedRisk> accepted_risks() const { return {}; }
  CallingExamples calling_examples(const std::string& image) const;
  /// Triton serves a repository of models of any kind: their memory is not judged.
  ModelMemory model_memory() const { return {}; }
};

/// vLLM's OpenAI-compatible server, serving one language model from Hugging Face or a GCS store.
struct Vllm {
  static constexpr std::string_view kName = "vllm";
  std::string model;              ///< a Hugging Face model id; "" when `weights` holds the model
  StoreRef weights;               ///< `url` is gs://bucket/prefix/path; empty with `model`
  std::string revision;           ///< the Hugging Face revision; "" = the main branch
  std::string served_name;        ///< what requests name and /v1/models lists
  int tensor_parallel = 1;        ///< GPUs one copy of the model spans: all of the pod's
  std::vector<std::string> args;  ///< further `vllm serve` flags
  std::string args_reason;        ///< why the risky flags of `args` are acceptable ("" = none given)
  std::string params;             ///< the parameter count as the spec gives it ("72B"); "" = from the name
  std::string dtype;              ///< the weights' data type as the spec gives it; "" = from the name or args
  bool require_fit = false;       ///< an unknown model size is an error, not a warning

  // Facts (model/kinds/vllm.cpp).
  static std::vector<ServerPort> ports();
  std::vector<std::string> argv() const;
  static ServerProbes probes();
  static GatewayRoutes routes();
  static ScalingMetric scaling_metric();
  static MetricsEndpoint metrics();
  static std::vector<std::string_view> reserved_flags();
  /// Flags vLLM's own docs call risky, each with what it lets happen; they need `argsReason`.
  static std::vector<std::pair<std::string_view, std::string_view>> risky_flags();
  std::vector<const StoreRef*> store_refs() const;
  std::vector<UserWords> user_words() const { return {{&args, "args"}}; }
  std::vector<HealthCheck> health_checks() const;
  /// The weights are the user's to put in the store (or Hugging Face's): nothing is checked.
  std::vector<StoreContents> store_contents() const { return {}; }
  /// The flags of `args` that risky_flags() names, each with `args_reason`.
  std::vector<AcceptedRisk> accepted_risks() const;
  CallingExamples calling_examples(const std::string& image) const;
  /// The weights from `params` and `dtype`, else from the model's name and args (vllm.cpp).
  ModelMemory model_memory() const;
};

using ServerKind = std::variant<Triton, Vllm>;
static_assert(every_alternative<ServerKind, CheckServerFacts>);

/// The ports a server listens on: HTTP first (probes and the health check use it), then gRPC,
/// then metrics.
std::vector<ServerPort> server_ports(const ServerKind& kind);

/// How a service is reached from outside the cluster.
struct Exposure {
  bool gateway = false;            ///< through the Istio ingress gateway
  std::vector<std::string> hosts;  ///< the gateway's hosts for it
  std::string path_prefix;         ///< the HTTP API under this path ("" = at the root, with gRPC)
  std::string ptr;
};

struct Service {
  std::string name, ptr;
  ServerKind server;
  std::string image, image_pull_policy = "IfNotPresent";
  std::string pool;  ///< "" = no placement constraint
  std::vector<std::string> needs;  ///< steps whose output it serves: applied after them, rolled by their runs
  int replicas = 1, min = 1, max = 1, gpus = 0;
  int pending_requests = 10;  ///< the HPA's target of waiting requests per pod
  Resources resources;
  std::string shm;
  int startup_seconds = kDefaultStartupSeconds;
  Exposure expose;
  Identity identity;
  StringMap env, labels;
  SecretEnvMap secret_env;  ///< env from Secrets (`{secretRef: ...}`)
  PodSecurity security;
  bool autoscaled() const { return min < max; }
  std::string kind() const;  ///< the server kind's kName
  template <class T>
  const T* as() const { return std::get_if<T>(&server); }
  // The server kind's facts (ServerFacts in model/kinds/facts.h).
  std::vector<std::string> argv() const;
  ServerProbes probes() const;
  GatewayRoutes routes() const;
  ScalingMetric scaling_metric() const;
  MetricsEndpoint metrics() const;
  std::vector<std::string_view> reserved_flags() const;
  std::vector<const StoreRef*> store_refs() const;
  std::vector<UserWords> user_words() const;
  std::vector<HealthCheck> health_checks() const;
  std::vector<StoreContents> store_contents() const;
  CallingExamples calling_examples() const;  ///< for the service's image
  std::vector<AcceptedRisk> accepted_risks() const;
  ModelMemory model_memory() const;
};

/// The Istio mesh services run in.
struct Istio {
  bool install = true;  ///< apply.sh installs it (pinned); false = a mesh is already there
  std::string ptr;
};

struct Cluster {
  std::string name;             ///< GKE cluster name (default: the system name)
  std::string release_channel;  ///< RAPID, REGULAR, STABLE; "" = GKE's default
};

/// Where the spec and its output live, relative to the root of the git work tree holding both (or,
/// when none does, the nearest folder holding both; never the current folder), with '/': what
/// generated CI pipelines refer to (io/work_tree.h).
struct Origin {
  std::string spec;  ///< e.g. examples/mnist/spec.yaml
  std::string out;   ///< the output root given to compile -o / diff --against, e.g. golden
  /// Why no pipeline can name these paths ("" when it can): CI files are then not written.
  std::string outside_repository;
  /// SHA-256 of the spec file's bytes: scripts that read files beside the spec check it first.
  std::string spec_sha256;
  /// Whether the spec's folder is the output root or inside it, where compiled output would hide it.
  bool spec_in_output = false;
  /// `rel` (relative to the spec's folder) as a path from `from`, a folder relative to the system's
  /// output folder ("scripts", or "" for the folder itself): how the outputs name a file beside
  /// the spec, in a checkout of the repository wherever it lies.
  std::string spec_path_from(const std::string& from, const std::string& system, const std::string& rel) const;
  /// The folder paths are recorded relative to, as a path from the system's output folder ("../..").
  std::string root_from(const std::string& system) const;
};

struct System {
  std::string name, ptr;
  Origin origin;
  std::optional<Gcp> gcp;
  Cluster cluster;
  std::optional<Identity> identity;
  std::string ns;
  bool owns_namespace = true;  ///< false when the spec names an existing namespace
  std::string service_account;
  /// Why pods that talk to the API may keep a token of `service_account`, which trainc did not
  /// create (spec `serviceAccountToken.reason`); "" when the spec gives none.
  std::string service_account_token_reason;
  std::string runtime_image;  ///< the trainrt image (spec `runtime.image`), "" when not set
  StringMap labels;
  std::map<std::string, Pool> pools;
  std::map<std::string, Store> stores;
  std::map<std::string, ComputeCluster> clusters;
  std::map<std::string, Service> services;
  std::optional<Istio> istio;
  std::optional<Queue> queue;
  std::vector<Step> steps;  ///< in dependency order (every step after the steps it needs)
  std::map<std::string, Build> builds;  ///< images trainc's outputs build, by name
  std::optional<Ci> ci;

  const Pool* pool(const std::string& name) const;
  /// Every pool's rung_pools(), pools by name: what up.sh, Terraform and Kueue's flavors make.
  std::vector<Pool> gke_pools() const;
  const Store* store(const std::string& name) const;
  const ComputeCluster* compute_cluster(const std::string& name) const;
  /// RDMA NICs the RDMA VPC needs subnets for: the most GPUs of any pool with rdma (0 = none).
  int rdma_nics() const;
  /// The service account pods run as: the identity's KSA, else `serviceAccount`, else "".
  std::string pod_service_account() const;
  /// Every identity trainc creates: the system's, then each service's (needs `gcp`).
  std::vector<const Identity*> identities() const;
  /// Whether any service is exposed through the Istio gateway.
  bool uses_gateway() const;
};

/// An Artifact Registry repository the nodes pull images from, read as
/// LOCATION-docker.pkg.dev/PROJECT/REPOSITORY/IMAGE.
struct PulledRepository {
  std::string location, project, repository;
  bool own = false;  ///< the system's registry (gcp.registry), in the project the system deploys to
  std::string host() const { return location + "-docker.pkg.dev"; }
  auto operator<=>(const PulledRepository&) const = default;
};

/// The Google service account a cluster's nodes run as instead of the Compute Engine default one:
/// roles/container.defaultNodeServiceAccount on the project, and read access on each repository
/// its pods pull from, never on the project. Terraform and up.sh make it; down.sh deletes it.
struct NodeAccount {
  std::string cluster;  ///< the GKE cluster whose nodes run as it
  std::string id;       ///< the account id: "<cluster>-nodes", shortened with a hash to fit 30 characters
  std::vector<PulledRepository> repositories;  ///< the system's registry first, then the others in order
  std::string email(const Gcp& gcp) const { return id + "@" + gcp.project + ".iam.gserviceaccount.com"; }
  std::string display_name() const;
};
/// The nodes' account of a system with `gcp`.
NodeAccount node_account(const System& sys);
/// The Artifact Registry repository an image reference names, or nullopt for any other registry
/// (gcr.io, Docker Hub, nvcr.io, ...), whose images need no grant.
std::optional<PulledRepository> pulled_repository(const std::string& image);

}  // namespace trainc
