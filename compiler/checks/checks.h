#pragma once
// Semantic checks on the lowered model, one family per file. Each reports at the spec position
// of the value that causes the problem.
#include <set>
#include <string>

#include "frontend/document.h"
#include "model/model.h"

namespace trainc {

/// What the user lets through on the command line.
struct CheckOptions {
  /// Env names, values or data paths (pipeline[0].command[3]) that look like credentials but are not.
  std::set<std::string> allow_secret_like;
};

/// Each entity's own settings, judged on the system as lowering built it, before the families
/// below: an error leaves its entity out of them, as a lowering error does (run by lower_for_checks).
void check_lowered(const System& sys, const Document& doc, Diagnostics& diags);

/// `gcp`-dependent settings, identities and each workload's security settings (system_lowered.cpp).
void check_system_settings(const System& sys, const Document& doc, Diagnostics& diags);
/// Pod group sizes and the settings of each engine (clusters_lowered.cpp).
void check_cluster_settings(const System& sys, const Document& doc, Diagnostics& diags);
/// Autoscaling and the server's own arguments (services_lowered.cpp).
void check_service_settings(const System& sys, const Document& doc, Diagnostics& diags);
/// Where a step writes, its size, its kind's settings and the tables it reads (steps_lowered.cpp).
void check_step_settings(const System& sys, const Document& doc, Diagnostics& diags);

/// The value the spec wrote at `ptr`, or nullptr: for settings judged on how they were written.
const nlohmann::json* written(const Document& doc, const std::string& ptr);

/// Runs every family; returns true when none reported an error. `whole`, when given, is set to
/// whether every family before the topology and placement ones passed: the system is right in its
/// parts, and only where its pods would run is wrong (what `trainc plan` can still show).
bool run_checks(const System& sys, const Document& doc, Diagnostics& diags, const CheckOptions& opts = {},
                bool* whole = nullptr);

/// Pools agree with the hardware catalog: GPUs, TPU topologies, provisioning (hardware.cpp).
void check_pools(const System& sys, const Document& doc, Diagnostics& diags);
/// Capacity ladders and queued provisioning: each rung one GKE and Kueue can give (capacity.cpp).
void check_capacity(const System& sys, const Document& doc, Diagnostics& diags);
/// Generated Kubernetes names fit their limits (names.cpp).
void check_names(const System& sys, const Document& doc, Diagnostics& diags);
/// Every object of the output is one of a kind: no two workloads make the same (API group, kind,
/// namespace, name), which would be one object on the cluster (names.cpp). Run on a system the
/// other families passed: it builds the output's plan.
void check_object_names(const System& sys, const Document& doc, Diagnostics& diags);
/// Each step says what to run, checkpoints live inside outputs, env does not shadow trainc's (steps.cpp).
void check_steps(const System& sys, const Document& doc, Diagnostics& diags);
/// Multi-node GPU steps say how often they checkpoint (checkpoints.cpp): a warning, with the
/// failures per day their GPUs expect (model/goodput.h); an interval the step's timeout never
/// lets pass is an error.
void check_checkpoints(const System& sys, const Document& doc, Diagnostics& diags);
/// Compute clusters fit their pools; steps on a cluster use what its engine runs (clusters.cpp).
void check_clusters(const System& sys, const Document& doc, Diagnostics& diags);
/// Services fit their pools, their gateway has a mesh and each host one service (services.cpp).
void check_services(const System& sys, const Document& doc, Diagnostics& diags);
/// Each workload's Pod Security level covers what its pods do (security.cpp).
void check_security(const System& sys, const Document& doc, Diagnostics& diags);
/// Each step's Pod Security level covers what its pods do on its pool; only the steps named in
/// `only` when given. check_lowered judges the steps that lowering errors leave out of the later
/// checks (and those that need them), so those errors do not hide this one until they are fixed.
void check_step_security(const System& sys, const Document& doc, Diagnostics& diags,
                         const std::set<std::string>* only = nullptr);
/// No value that looks like a credential is written in plain text (secrets.cpp).
void check_secrets(const System& sys, const Document& doc, Diagnostics& diags, const CheckOptions& opts);
/// The images' known facts (stdlib/images.yaml): the tools the pods call, kernels for the pools'
/// GPUs, a driver the pools can give (images.cpp).
void check_images(const System& sys, const Document& doc, Diagnostics& diags);
/// GPUs, nodes and memory fit the pools and limits declared (resources.cpp).
void check_resources(const System& sys, const Document& doc, Diagnostics& diags);
/// What the pinned KubeRay, JobSet and Kueue refuse of the objects trainc writes (operators.cpp).
void check_operators(const System& sys, const Document& doc, Diagnostics& diags);
/// Topology-aware placement has a queue and labelled machines, and a step's own placement a pool
/// placed by topology (topology.cpp).
void check_topology_settings(const System& sys, const Document& doc, Diagnostics& diags);

struct Placement;
/// On `placed` (model/placement.h, place(sys)): a pool placed by topology has each queued
/// workload's nodes even at its smallest, and a required host holds its PodSet (topology.cpp).
void check_topology(const System& sys, const Placement& placed, const Document& doc, Diagnostics& diags);
/// Every pod, as the cluster runs it, finds room on its pool next to what runs at the same time
/// (placement.cpp).
void check_placement(const System& sys, const Placement& placed, const Document& doc, Diagnostics& diags);

}  // namespace trainc
