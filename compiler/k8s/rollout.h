#pragma once
// The rollout: the order a system goes up in and comes down in, computed once per compile from
// the Kubernetes plan. apply.sh, down.sh, the runbook and the CI pipelines only render it, so they
// agree by construction (tests/rollout_test.sh compares the runbook's order with apply.sh's).
#include <string>
#include <vector>

#include "k8s/plan.h"
#include "model/catalog.h"
#include "model/model.h"

namespace trainc {

/// What the system installs into the cluster before its own objects.
enum class Addon {
  kIstio,           ///< Istio's charts: CRDs, the control plane, and the ingress gateway when exposed
  kKubeRay,         ///< the KubeRay operator, before any RayCluster
  kMetricsAdapter,  ///< the Custom Metrics Stackdriver Adapter, which the services' autoscalers read
  kKueue,           ///< Kueue, before its queues and any queued workload
  kJobSet,          ///< the JobSet controller, before any JobSet
};

/// An image in the system's own Artifact Registry repository that the manifests name: it must
/// have been pushed before anything is applied.
struct RegistryImage {
  std::string image;             ///< the full reference, as the manifests name it
  const Build* build = nullptr;  ///< the build that makes it (scripts/build.sh, CI); nullptr: none does
  bool runtime = false;          ///< the trainrt image (`runtime.image`), built from docker/trainrt.Dockerfile
};

struct RolloutStep {
  enum class Kind {
    kImages,    ///< every Artifact Registry image that the manifests name is there
    kInstall,   ///< an addon: its charts (helm), or its pinned manifest (a controller's is waited for)
    kShared,    ///< the shared objects: the namespace first
    kCluster,   ///< a long-lived compute cluster's objects; steps on it wait until it is ready
    /// A service's store contents (Service::store_contents), before its objects: uploaded from
    /// their source, or, without one, looked for (the server reads them only when it starts).
    kContents,
    kService,   ///< a service's objects, then its rollout
    kHealth,    ///< every service is asked whether it serves, as a client would
    kWorkload,  ///< a pipeline step's objects, once what it waits for is done
  };
  Kind kind;
  Addon addon{};                        ///< kInstall
  std::vector<const Operator*> charts;  ///< kInstall: helm charts, in install order
  const Manifest* manifest = nullptr;   ///< kInstall: a manifest applied with kubectl
  bool controller = false;              ///< the manifest's webhooks must answer before its kinds go in
  const k8s::Workload* workload = nullptr;  ///< kCluster, kContents, kService, kWorkload
  std::vector<std::string> files;       ///< the k8s/ files applied (kShared, kCluster, kService, kWorkload)
  /// kWorkload: what it waits for first, each wait once in the whole rollout: the cluster it runs
  /// on, then the steps it needs that are not done when applied.
  std::vector<const k8s::Object*> waits;
  std::vector<RegistryImage> images;  ///< kImages, by reference
};

struct TeardownStep {
  enum class Kind {
    kReleaseLoadBalancer,  ///< the ingress gateway's chart, while the cluster can release its load balancer
    kDeleteObjects,        ///< the system's Kubernetes objects (kubectl delete -k)
    kUninstall,            ///< a chart, after the objects of its kinds are gone
    kInfrastructure,       ///< what up.sh or Terraform made, the cluster last
  };
  Kind kind;
  const Operator* chart = nullptr;  ///< kReleaseLoadBalancer, kUninstall
};

struct Rollout {
  /// In order: images, addons, shared objects, clusters, services (each after its store contents),
  /// health, steps.
  std::vector<RolloutStep> steps;
  std::vector<TeardownStep> teardown;
  /// The steps before the first pipeline step: what `apply.sh --services-only` (CI's deploy) runs.
  std::size_t services_end() const;
};

Rollout make_rollout(const System& sys, const k8s::Plan& plan);

/// The Artifact Registry images (HOST-docker.pkg.dev/...) that the pods name (steps, compute
/// clusters, services), by reference, for a system on GKE: the system's own registry's, the
/// trainrt image, and any other repository's, which nodes can pull only once someone pushed them.
/// Images elsewhere (Docker Hub, nvcr.io, gcr.io) are public or not Artifact Registry's.
std::vector<RegistryImage> registry_images(const System& sys);

}  // namespace trainc
