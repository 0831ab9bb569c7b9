#pragma once
// Every Kubernetes name trainc generates comes from here, so the name checks see exactly the
// names the emitter writes.
#include <string>
#include <string_view>
#include <vector>

#include "model/model.h"
#include "model/placement.h"

namespace trainc::k8s {

inline constexpr int kHashLength = 10;
inline constexpr std::string_view kEntrypointDir = "/opt/trainc";
inline constexpr std::string_view kStateDir = "/tmp/trainc";
/// Where the tools trainc brings into a pod (model/images.h injected_tools) are copied.
inline constexpr std::string_view kToolsDir = "/opt/trainc-tools";
inline constexpr std::string_view kPortName = "torchrun";
/// Files under k8s/ that are not a step's.
inline constexpr std::string_view kNamespaceFile = "k8s/namespace.yaml";
inline constexpr std::string_view kServiceAccountFile = "k8s/serviceaccount.yaml";

/// "<system>-<step>": what every run of a step starts with (its runs' labels name the step alone).
std::string step_base_name(const System& sys, const Step& step);
/// The labels that find a step's runs: every run object carries the step's name and its run id.
inline constexpr std::string_view kStepLabel = "trainc.dev/step";
inline constexpr std::string_view kRunLabel = "trainc.dev/run";
/// On a service's pod template: "<step>=<run id>,..." for the steps whose output it serves (its
/// `needs`), so a new run of one rolls it.
inline constexpr std::string_view kServedRunsAnnotation = "trainc.dev/serves-runs";
/// A run marks its first start with an empty file "<prefix><run id>" in its checkpoint folder: the
/// checkpoints written since are its own (k8s/entry_script.h).
inline constexpr std::string_view kRunMarkerPrefix = ".trainc-run-";
/// On the Jobs a scheduled step's CronJob makes and their pods: the CronJob's name. apply.sh's run
/// pruning leaves such Jobs to the CronJob's own history limits.
inline constexpr std::string_view kScheduleLabel = "trainc.dev/schedule";
/// A run id from the hex digest of what the run runs: its first kHashLength-digit window that no
/// YAML reader takes for a number. A label value of digits with one "e" ("540e781626") is a float
/// to YAML 1.2 too large for Go's parser, which is why kustomize's writer drops its quotes and the
/// label reaches the API server as null; digits alone, or "0b" and binary digits (YAML 1.1), are
/// numbers as well.
std::string run_id(std::string_view hex_digest);
/// "<system>-<step>-<run>": the step's current run, named by what it runs (Step::run_id), so the
/// same output applied again starts nothing and a changed step is a new run beside the old ones.
/// Its Job (or JobSet, RayJob), entry-script ConfigMap, headless Service and the pods' instance
/// label. "<system>-<step>" before name_runs has set the run.
std::string job_name(const System& sys, const Step& step);
/// job_name as it will be once the run is named: before, its run id is a stand-in of the same
/// length ("<system>-<step>-xxxxxxxxxx"), so the checks judge the lengths the emitter writes.
std::string planned_job_name(const System& sys, const Step& step);
/// "<system>-<cluster>": a compute cluster's objects start with it (and the RayCluster is named it).
std::string cluster_name(const System& sys, const ComputeCluster& c);
/// "<system>-<cluster>-scheduler": a Dask scheduler's Deployment and Service.
std::string dask_scheduler_name(const System& sys, const ComputeCluster& c);
/// "<system>-<cluster>-<group>": a Dask worker group's Deployment.
std::string worker_group_name(const System& sys, const ComputeCluster& c, const PodGroup& g);
/// The head Service KubeRay makes for a RayCluster: "<raycluster>-head-svc".
std::string ray_head_service(const System& sys, const ComputeCluster& c);
/// "<system>-<service>": a service's Deployment, Service and the objects around them.
std::string service_name(const System& sys, const Service& s);
/// The label naming the namespace a cluster-scoped object of a system serves: pruning selects the
/// system's cluster-scoped objects by it with the system's own labels, so that another system of
/// the same name in another namespace keeps its own.
inline constexpr std::string_view kNamespaceLabel = "trainc.dev/namespace";
/// Kueue's objects are cluster-scoped, so their names must tell apart two systems of one name in two
/// namespaces, and `<system>-<pool>` joins that meet (system `a` with pool `x-y`, system `a-x` with
/// pool `y`): each ends in a hash of the namespace and the names, kept apart (scope_hash; the
/// Topology and ResourceFlavors in k8s/queue.h).
inline constexpr int kScopeHashLength = 6;
/// The first kScopeHashLength hex digits of the SHA-256 of `parts`, each ended by a NUL (which no
/// name holds), so that no two lists of names join to the same text.
std::string scope_hash(std::initializer_list<std::string_view> parts);
/// The Kueue ClusterQueue, "<system>-<scope_hash(namespace, system)>": named after the system
/// (whose namespace it serves), never after the spec's queue name, which another system may use too.
std::string cluster_queue_name(const System& sys);
/// "<system>-gateway": the Istio Gateway every exposed service binds its routes to.
std::string gateway_name(const System& sys);
/// GPUDirect RDMA: the VPC and its per-NIC subnets (Terraform and up.sh make them), and the GKE
/// networks pods name in their networking.gke.io/interfaces annotation.
std::string rdma_vpc(const System& sys);
std::string rdma_subnet(const System& sys, int nic);
std::string rdma_network(int nic);
/// The second gVNIC NIC (eth1) of RDMA nodes: its VPC, subnet and the firewall rule that lets the
/// nodes reach each other on it (Terraform and up.sh make them); pods name it by the catalog's
/// rdma.gvnic.network.
std::string gvnic_vpc(const System& sys);
std::string gvnic_subnet(const System& sys);
std::string gvnic_firewall(const System& sys);
/// The entry script's ConfigMap: the run's name (the script is part of what names the run).
std::string configmap_name(const System& sys, const Step& step);
/// Whether the step runs as a JobSet: model/placement.h's, which the placement also asks (the
/// JobSet controller's pod is counted for it).
using trainc::runs_as_jobset;
/// The replicated Job of a TPU step's JobSet: one per slice.
inline constexpr std::string_view kSliceJob = "slice";
/// The replicated Job of a gang's JobSet: one Indexed Job, a pod per node.
inline constexpr std::string_view kGangJob = "node";
/// kSliceJob or kGangJob.
std::string_view replicated_job(const System& sys, const Step& step);
/// A pod's hostname: "<job>-<index>" in an Indexed Job, "<jobset>-<replicated job>-0-<index>" in
/// a JobSet's first Job; resolvable as "<host>.<job or jobset>".
std::string pod_hostname(const System& sys, const Step& step, int index);
/// Host 0 of slice 0 of a TPU step's JobSet, by its stable DNS name: "<jobset>-slice-0-0.<jobset>".
std::string jobset_coordinator(const System& sys, const Step& step);
/// The rendezvous address other ranks connect to.
std::string master_addr(const System& sys, const Step& step);

/// The pod volume of a GCS mount: "gcs-<store>".
std::string mount_volume(const Mount& m);

/// A short stable hash of `data` (FNV-1a 64, hex).
std::string content_hash(std::string_view data);

struct GeneratedName {
  std::string name;
  std::string what;  ///< "Job", "pod hostname", ...
};

/// Every name the emitter will produce for `step` that must fit a 63-character DNS label (with the
/// run id's stand-in before the run is named).
std::vector<GeneratedName> step_names(const System& sys, const Step& step);
/// The same for a service.
std::vector<GeneratedName> service_names(const System& sys, const Service& s);
/// The same for a compute cluster: its object names, which are also its pods' instance label.
std::vector<GeneratedName> cluster_names(const System& sys, const ComputeCluster& c);

}  // namespace trainc::k8s
