#include "k8s/pod.h"

#include <algorithm>

#include <fmt/format.h>

#include "k8s/names.h"
#include "model/catalog.h"
#include "model/images.h"
#include "model/placement.h"
#include "quoting/shell.h"

namespace trainc::k8s {

ojson typed(const Object& obj) { return {{"apiVersion", obj.api_version}, {"kind", obj.kind}}; }

ojson labels_for(const System& sys, const std::string& name, const std::string& instance, const std::string& component,
                 const StringMap& extra) {
  ojson l = ojson::object();
  l["app.kubernetes.io/name"] = name;
  l["app.kubernetes.io/instance"] = instance;
  l["app.kubernetes.io/component"] = component;
  l["app.kubernetes.io/part-of"] = sys.name;
  l["app.kubernetes.io/managed-by"] = "trainc";
  for (const auto& [k, v] : sys.labels) l[k] = v;
  for (const auto& [k, v] : extra) l[k] = v;
  return l;
}

ojson run_labels(const System& sys, const Step& step, const std::string& component) {
  ojson l = labels_for(sys, step.name, job_name(sys, step), component, step.labels);
  if (!step.run_id.empty()) {
    l[std::string(kStepLabel)] = step.name;
    l[std::string(kRunLabel)] = step.run_id;
  }
  return l;
}

ojson batch_pod_labels(const System& sys, ojson labels) {
  if (sys.istio) labels["sidecar.istio.io/inject"] = "false";
  return labels;
}

ojson rolling_update(const Rollout& r) {
  ojson unavailable = r.max_unavailable;
  if (r.max_unavailable_percent > 0) unavailable = fmt::format("{}%", r.max_unavailable_percent);
  return {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxSurge", r.max_surge}, {"maxUnavailable", unavailable}}}};
}

ojson metadata(const std::string& name, const std::string& ns, ojson labels) {
  ojson m;
  m["name"] = name;
  if (!ns.empty()) m["namespace"] = ns;
  m["labels"] = std::move(labels);
  return m;
}

ojson env_var(const std::string& name, const std::string& value) { return {{"name", name}, {"value", literal(value)}}; }

ojson env_field(const std::string& name, const std::string& field_path) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", field_path}}}}}};
}

std::vector<PodVar> rendezvous_env(const System& sys, const Step& step) {
  const Pool* pool = sys.pool(step.pool);
  if (!step.distributed() || (pool && pool->tpu)) return {};
  return {{"NNODES", std::to_string(step.nodes), ""},
          {"NODE_RANK", "", "metadata.annotations['batch.kubernetes.io/job-completion-index']"},
          {"MASTER_ADDR", master_addr(sys, step), ""},
          {"MASTER_PORT", std::to_string(rendezvous_port(step.run)), ""}};
}

void add_env(ojson& env, const std::vector<PodVar>& vars) {
  for (const auto& v : vars) env.push_back(v.field.empty() ? env_var(v.name, v.value) : env_field(v.name, v.field));
}

ojson resources(const Resources& r, const PodNeeds& n) {
  ojson requests = ojson::object(), limits = ojson::object();
  for (const auto& [k, v] : r.requests) requests[k] = v;
  for (const auto& [k, v] : r.limits) limits[k] = v;
  if (n.gpus > 0) {
    requests["nvidia.com/gpu"] = n.gpus;
    limits["nvidia.com/gpu"] = n.gpus;
  }
  if (n.pool && n.pool->tpu) {
    requests["google.com/tpu"] = n.pool->tpu->chips_per_host;
    limits["google.com/tpu"] = n.pool->tpu->chips_per_host;
  }
  ojson res = ojson::object();
  if (!requests.empty()) res["requests"] = requests;
  if (!limits.empty()) res["limits"] = limits;
  return res;
}

void add_volume_mounts(ojson& mounts, const PodNeeds& n) {
  mounts.push_back({{"name", "shm"}, {"mountPath", "/dev/shm"}});
  if (n.mounts)
    for (const auto& m : *n.mounts)
      mounts.push_back({{"name", mount_volume(m)}, {"mountPath", m.path}, {"readOnly", m.read_only}});
  if (n.rdma()) {
    mounts.push_back({{"name", "nvidia"}, {"mountPath", "/usr/local/nvidia"}});
    mounts.push_back({{"name", "gib"}, {"mountPath", "/usr/local/gib"}});
  }
}

bool built_by_trainc(const System& sys, const std::string& image) {
  for (const auto& [_, b] : sys.builds)
    if (b.generated() && b.image == image) return true;
  return !image.empty() && image == sys.runtime_image;
}

std::optional<int> image_uid(const System& sys, const std::string& image) {
  for (const auto& [_, b] : sys.builds)
    if (b.generated() && b.image == image) return 1000;  // stdlib/docker/image.Dockerfile.in
  if (!image.empty() && image == sys.runtime_image) return 10001;  // stdlib/docker/trainrt.Dockerfile.in
  if (const auto f = image_book().facts(image); f && f->uid && *f->uid != 0) return f->uid;
  return std::nullopt;
}

namespace {

/// Whether the image's /etc/passwd names `uid` with a home: Python's getpass.getuser() (torch's
/// and vLLM's cache setup) raises KeyError for a uid it does not name, unless USER or LOGNAME is set.
bool uid_has_home(const System& sys, const std::string& image, int uid) {
  if (uid == 0) return true;
  if (built_by_trainc(sys, image)) return image_uid(sys, image) == uid;
  const auto f = image_book().facts(image);
  return f && f->knows_uid(uid);
}

}  // namespace

bool opens_tpu_as_root(const Pool* pool, const PodSecurity& sec) { return pool && pool->tpu && !sec.restricted(); }

PodNeeds needs_for(const System& sys, const Pool* pool, int gpus, const std::string& shm,
                   const std::vector<Mount>* mounts, const std::string& image, const PodSecurity& sec) {
  const std::optional<int> own = image_uid(sys, image);
  const int uid = sec.restricted()                ? sec.run_as.value_or(own.value_or(1000))
                  : opens_tpu_as_root(pool, sec) ? 0
                                                 : own.value_or(0);
  PodNeeds n{pool, gpus, shm, mounts, uid};
  n.security = &sec;
  n.known_image = built_by_trainc(sys, image);
  n.uid_has_home = uid_has_home(sys, image, uid);
  return n;
}

void secure_pod(ojson& pod, const PodNeeds& n) {
  if (!n.api_access) pod["automountServiceAccountToken"] = false;
  ojson sc = ojson::object();
  if (n.restricted()) {
    sc["runAsNonRoot"] = true;
    sc["runAsUser"] = n.uid;
    sc["runAsGroup"] = n.uid;
    sc["fsGroup"] = n.uid;  // emptyDir and CSI volumes writable by the pods' group
  } else if (n.security && opens_tpu_as_root(n.pool, *n.security)) {
    // TPU pods run as root whatever the image's USER, as the README says (model.cpp's
    // security_need). GKE's "Deploy TPU workloads in GKE Standard" (docs/how-to/tpus) needs
    // privileged mode only before GKE 1.28; from 1.28 its pods open the TPU devices through the
    // google.com/tpu resource alone, and its samples do so as their images' root. Opening
    // /dev/vfio (v5e, v6e) or /dev/accel* (v4, v5p) as another user is not documented.
    sc["runAsUser"] = 0;
    sc["runAsGroup"] = 0;
  }
  // RuntimeDefault is allowed at every level; privileged pods keep their runtime's default, as
  // GKE's host-network and RDMA setups are documented with it.
  if (!n.security || n.security->level != PodSecurityLevel::kPrivileged)
    sc["seccompProfile"] = {{"type", "RuntimeDefault"}};
  if (!sc.empty()) pod["securityContext"] = sc;
}

ojson container_security(const PodNeeds& n) {
  ojson sc = {{"allowPrivilegeEscalation", false}};
  if (n.restricted()) sc["capabilities"] = {{"drop", {"ALL"}}};
  return sc;
}

PodSecurityLevel namespace_level(const System& sys) {
  PodSecurityLevel level = PodSecurityLevel::kRestricted;
  auto widen = [&](PodSecurityLevel l) { level = std::max(level, l); };
  // The pods as the cluster makes them: each container at its level, trainc's and those the
  // webhooks and operators add (Istio's init container needs NET_ADMIN and NET_RAW).
  auto pod = [&](const FinalPod& p) {
    for (const auto& c : p.containers) widen(c.level);
  };
  for (const auto& p : long_lived_pods(sys)) pod(p);
  for (const auto& step : sys.steps) {
    widen(step.security.level);
    for (const auto& p : step_pods(sys, step)) pod(p);
  }
  for (const auto& [_, c] : sys.clusters) widen(c.security.level);
  return level;
}

namespace {

/// A GCS bucket as a CSI ephemeral volume of the GCS FUSE driver.
ojson gcsfuse_volume(const Mount& m, int uid) {
  std::string options = "implicit-dirs";
  if (uid != 0) options += fmt::format(",uid={0},gid={0}", uid);
  if (!m.only_dir.empty()) options += ",only-dir=" + m.only_dir;
  return {{"name", mount_volume(m)},
          {"csi",
           {{"driver", "gcsfuse.csi.storage.gke.io"},
            {"readOnly", m.read_only},
            {"volumeAttributes", {{"bucketName", m.bucket}, {"mountOptions", options}}}}}};
}

/// eth0 on the default network, eth1 on the second gVNIC network, then one NIC per GPU on the RDMA
/// networks rdma-0, rdma-1, ... (eth2, eth3, ...), as upstream's A4 samples attach them.
std::string rdma_interfaces(int gpus) {
  // Written with spaces after commas so the YAML writer can fold the line.
  std::string out = fmt::format(R"([{{"interfaceName": "eth0", "network": "default"}}, )"
                                R"({{"interfaceName": "eth1", "network": "{}"}})",
                                catalog().rdma().gvnic_network);
  for (int i = 0; i < gpus; ++i)
    out += fmt::format(R"(, {{"interfaceName": "eth{}", "network": "{}"}})", i + 2, rdma_network(i));
  return out + "]";
}

}  // namespace

void add_volumes(ojson& volumes, const PodNeeds& n) {
  volumes.push_back({{"name", "shm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", n.shm}}}});
  if (n.mounts)
    for (const auto& m : *n.mounts) volumes.push_back(gcsfuse_volume(m, n.uid));
  if (n.rdma()) {
    // The host's NVIDIA driver and the gIB NCCL plugin, as GKE installs them on A4 and A3 Ultra nodes.
    volumes.push_back({{"name", "nvidia"}, {"hostPath", {{"path", "/home/kubernetes/bin/nvidia"}}}});
    volumes.push_back({{"name", "gib"}, {"hostPath", {{"path", "/home/kubernetes/bin/gib"}}}});
  }
}

void place(ojson& pod, const PodNeeds& n) {
  const Pool* p = n.pool;
  ojson selector = ojson::object();
  ojson affinity;
  if (p) {
    const auto node_pools = p->node_pools();
    // A multislice pool is several GKE node pools, and a nodeSelector matches only one value. A
    // laddered pool's rungs share a node label; Kueue adds the node pool of the rung it admits on.
    if (p->laddered()) {
      selector[kLadderLabel] = p->name;
    } else if (node_pools.size() == 1) {
      selector["cloud.google.com/gke-nodepool"] = node_pools.front();
    } else {
      ojson in_pools = {{"key", "cloud.google.com/gke-nodepool"}, {"operator", "In"}, {"values", node_pools}};
      ojson terms = ojson::array({{{"matchExpressions", ojson::array({in_pools})}}});
      affinity = {{"nodeAffinity",
                   {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}};
    }
    if (p->accelerator && n.gpus > 0) selector["cloud.google.com/gke-accelerator"] = p->accelerator->type;
    if (p->tpu) {
      selector["cloud.google.com/gke-tpu-accelerator"] = p->tpu->accelerator;
      selector["cloud.google.com/gke-tpu-topology"] = p->tpu->topology;
    }
  }
  if (!selector.empty()) pod["nodeSelector"] = selector;
  if (!affinity.is_null()) pod["affinity"] = affinity;
  ojson tolerations = ojson::array();
  if (n.gpus > 0) tolerations.push_back({{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
  if (p && p->tpu) tolerations.push_back({{"key", "google.com/tpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
  if (p)
    for (const auto& t : p->taints) {
      if (t.value.empty()) tolerations.push_back({{"key", t.key}, {"operator", "Exists"}, {"effect", t.effect}});
      else tolerations.push_back({{"key", t.key}, {"operator", "Equal"}, {"value", t.value}, {"effect", t.effect}});
    }
  if (!tolerations.empty()) pod["tolerations"] = tolerations;
}

ojson pod_annotations(const PodNeeds& n) {
  ojson annotations = ojson::object();
  if (n.mounts && !n.mounts->empty()) annotations["gke-gcsfuse/volumes"] = "true";
  if (n.rdma()) {
    annotations["networking.gke.io/default-interface"] = "eth0";
    annotations["networking.gke.io/interfaces"] = rdma_interfaces(n.pool->accelerator ? n.pool->accelerator->count : 0);
  }
  return annotations;
}

std::vector<std::string> with_nccl_env(const std::vector<std::string>& argv) {
  // bash -c SCRIPT NAME ARGS...: the script sees the command as "$@", each word as the kubelet
  // passed it. The upstream script may read unset variables, so -u is not on.
  std::vector<std::string> out{"/bin/bash", "-c",
                               fmt::format("set -e\n. {}\nexec \"$@\"", sh_quote(catalog().rdma().nccl_env_script)),
                               "nccl-env"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

void add_secret_env(ojson& env, const SecretEnvMap& secrets) {
  for (const auto& [name, s] : secrets)
    env.push_back({{"name", name}, {"valueFrom", {{"secretKeyRef", {{"name", s.secret}, {"key", s.key}}}}}});
}

void add_node_env(ojson& env, const PodNeeds& n, const StringMap& user_env) {
  if (n.rdma()) env.push_back(env_var("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64"));
  if (n.uid_has_home) return;
  // A uid the image's /etc/passwd does not name (or an image trainc knows nothing of) has no home:
  // HOME would be /, not writable, so caches and tool configs (pip, Hugging Face, torch, gcloud,
  // aws) go to /tmp. Python's getpass.getuser() reads LOGNAME and USER before it asks the passwd
  // database, which would raise KeyError for this uid (vLLM and torch's cache setup call it; vLLM's
  // own non-root entrypoint sets both for this reason).
  if (!user_env.count("HOME")) env.push_back(env_var("HOME", "/tmp"));
  for (const char* name : {"USER", "LOGNAME"})
    if (!user_env.count(name)) env.push_back(env_var(name, "trainc"));
}

}  // namespace trainc::k8s
