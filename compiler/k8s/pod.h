#pragma once
// The pieces every pod trainc writes shares, whatever workload it belongs to (a step's Job, a
// Dask worker Deployment, a Ray worker group): labels, placement on its pool, GPUs, /dev/shm, GCS
// FUSE mounts and the RDMA wiring of A4 / A3 Ultra nodes.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/plan.h"
#include "model/model.h"
#include "quoting/kubelet.h"

namespace trainc::k8s {

using ojson = nlohmann::ordered_json;

/// apiVersion and kind of a planned object: the first two keys of every object trainc writes.
ojson typed(const Object& obj);
/// The recommended app.kubernetes.io labels, the system's labels, then `extra`.
ojson labels_for(const System& sys, const std::string& name, const std::string& instance, const std::string& component,
                 const StringMap& extra = {});
/// A step's run objects' labels: labels_for with the run's name as instance, the step's own
/// labels, then the step and run labels (names.h kStepLabel, kRunLabel) that find its runs.
ojson run_labels(const System& sys, const Step& step, const std::string& component);
/// A batch or compute pod's labels: with Istio on, it opts out of sidecar injection, since a
/// sidecar keeps a finished Job's pod running and these pods need no mesh.
ojson batch_pod_labels(const System& sys, ojson labels);
ojson metadata(const std::string& name, const std::string& ns, ojson labels);
/// A Deployment's `strategy` for the rollout the plan chose.
ojson rolling_update(const Rollout& r);
/// An env var whose value arrives as written (literal).
ojson env_var(const std::string& name, const std::string& value);
/// An env var from the pod's own field, e.g. metadata.name.
ojson env_field(const std::string& name, const std::string& field_path);

/// A variable of a pod's environment: a literal `value`, or the pod's own `field` when set.
struct PodVar {
  std::string name, value, field;
};
/// The rendezvous every pod of a multi-node step (not on TPUs) gets: NNODES, NODE_RANK (the
/// Job's completion index), MASTER_ADDR (pod 0's stable name) and MASTER_PORT; none for one
/// node. `trainc run --local` gives its ranks these, with loopback for the address and port.
std::vector<PodVar> rendezvous_env(const System& sys, const Step& step);
/// `vars` as the container's env entries.
void add_env(ojson& env, const std::vector<PodVar>& vars);

/// What a pod asks of its node and brings along.
struct PodNeeds {
  const Pool* pool = nullptr;
  int gpus = 0;
  std::string shm;
  const std::vector<Mount>* mounts = nullptr;
  int uid = 0;  ///< the user the pods run as (pod_uid); GCS FUSE mounts are owned by it when not root
  const PodSecurity* security = nullptr;  ///< the workload's level; nullptr = restricted
  bool known_image = false;               ///< trainc knows the image's user (it builds the image)
  bool uid_has_home = false;              ///< the image's /etc/passwd names `uid`, with a home (images trainc
                                          ///< builds, and those stdlib/images.yaml knows)
  bool api_access = false;                ///< the pods talk to the Kubernetes API (keep the token)
  bool rdma() const { return pool && pool->rdma; }
  bool restricted() const { return !security || security->restricted(); }
};

/// The uid an image runs as when trainc knows it: 1000 for images built from a Dockerfile trainc
/// generates, 10001 for the trainrt runtime image, the non-root USER stdlib/images.yaml gives its
/// family (rayproject/ray's 1000); nullopt for any other image, and for images that run as root.
std::optional<int> image_uid(const System& sys, const std::string& image);
/// Whether trainc builds `image` (from a Dockerfile it generates) or it is the trainrt image: the
/// folders a step writes are its user's.
bool built_by_trainc(const System& sys, const std::string& image);
/// Whether the pods open TPU devices as root: the pool has TPUs and the workload is not
/// `restricted` (which TPU pods may not be: model.cpp's security_need).
bool opens_tpu_as_root(const Pool* pool, const PodSecurity& sec);
/// The needs of a workload's pods for `image` at level `sec`, with the uid they run as: at
/// restricted the spec's runAsUser, else the image's own user, else 1000; at baseline and
/// privileged the image's own user (0, root, when trainc does not know it), and root on TPUs.
PodNeeds needs_for(const System& sys, const Pool* pool, int gpus, const std::string& shm,
                   const std::vector<Mount>* mounts, const std::string& image, const PodSecurity& sec);
/// The pod's securityContext for its level, and automountServiceAccountToken off unless the pods
/// need the Kubernetes API.
void secure_pod(ojson& pod_spec, const PodNeeds& n);
/// A container's securityContext for its pod's level.
ojson container_security(const PodNeeds& n);
/// The level a namespace can enforce: the least strict of its workloads' levels, and privileged
/// when Istio injects sidecars (their init container needs NET_ADMIN and NET_RAW).
PodSecurityLevel namespace_level(const System& sys);
/// requests/limits with the GPUs (and a TPU pool's chips) added; empty object when none.
ojson resources(const Resources& r, const PodNeeds& n);
/// /dev/shm, the GCS mounts, and on RDMA pools the host's NVIDIA and gIB folders.
void add_volume_mounts(ojson& mounts, const PodNeeds& n);
void add_volumes(ojson& volumes, const PodNeeds& n);
/// nodeSelector and tolerations for the pool (and its GPUs or TPU), as far as they apply.
void place(ojson& pod_spec, const PodNeeds& n);
/// The GCS FUSE and multi-network annotations the pod needs; empty object when none.
ojson pod_annotations(const PodNeeds& n);
/// Env entries that read keys of Kubernetes Secrets.
void add_secret_env(ojson& env, const SecretEnvMap& secrets);
/// `argv` run after the gIB plugin's NCCL settings are sourced (catalog rdma.ncclEnv), for the
/// containers of pods on RDMA pools that run a command of their own rather than an entry script.
std::vector<std::string> with_nccl_env(const std::vector<std::string>& argv);
/// LD_LIBRARY_PATH where the host's NVIDIA libraries are mounted (RDMA pools).
/// HOME=/tmp for restricted pods of images trainc did not build, unless the spec sets HOME itself.
void add_node_env(ojson& env, const PodNeeds& n, const StringMap& user_env);

}  // namespace trainc::k8s
