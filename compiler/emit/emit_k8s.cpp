// Kubernetes target: every object of the plan (emit/k8s_plan.h) under k8s/, and a
// kustomization.yaml listing them in apply order.
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "base/overloaded.h"
#include "base/units.h"
#include "emit/emitter.h"
#include "emit/k8s_names.h"
#include "emit/trainrt_command.h"
#include "emit/yaml_writer.h"

namespace trainc {
namespace {

using ojson = nlohmann::ordered_json;

ojson labels_for(const System& sys, const std::string& name, const std::string& instance, const std::string& component,
                 const StringMap& extra = {}) {
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

ojson step_labels(const System& sys, const Step& step) {
  return labels_for(sys, step.name, k8s::job_name(sys, step), step.kind(), step.labels);
}

ojson metadata(const std::string& name, const std::string& ns, ojson labels) {
  ojson m;
  m["name"] = name;
  if (!ns.empty()) m["namespace"] = ns;
  m["labels"] = std::move(labels);
  return m;
}

std::string header(const System& sys, std::string_view what) {
  return fmt::format("{}\n{} of system '{}'", kGeneratedNotice, what, sys.name);
}

ojson env_var(const std::string& name, const std::string& value) { return {{"name", name}, {"value", value}}; }

ojson exec_probe(const std::string& script, int period, int failures) {
  return {{"exec", {{"command", {"/bin/sh", "-c", script}}}}, {"periodSeconds", period}, {"failureThreshold", failures}};
}

ojson exec_argv(const std::vector<std::string>& argv, int period, int failures) {
  return {{"exec", {{"command", argv}}}, {"periodSeconds", period}, {"failureThreshold", failures}};
}

ojson container(const System& sys, const Step& step) {
  ojson c;
  c["name"] = step.name;
  c["image"] = step.image;
  c["imagePullPolicy"] = step.image_pull_policy;
  c["command"] = {"/bin/bash", fmt::format("{}/entrypoint.sh", k8s::kEntrypointDir)};
  c["workingDir"] = step.workdir;
  ojson env = ojson::array();
  env.push_back(env_var("PYTHONUNBUFFERED", "1"));  // prints reach the log (and the heartbeat) at once
  if (step.distributed()) {
    env.push_back(env_var("NNODES", std::to_string(step.nodes)));
    env.push_back({{"name", "NODE_RANK"},
                   {"valueFrom",
                    {{"fieldRef", {{"fieldPath", "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}}}});
    env.push_back(env_var("MASTER_ADDR", k8s::master_addr(sys, step)));
    env.push_back(env_var("MASTER_PORT", std::to_string(rendezvous_port(step.run))));
  }
  std::set<std::string> regions, secrets;
  auto note_store = [&](const std::string& store) {
    if (const auto* s = sys.store(store)) {
      if (!s->region.empty()) regions.insert(s->region);
      if (!s->credentials_secret.empty()) secrets.insert(s->credentials_secret);
    }
  };
  for (const auto& in : step.inputs) note_store(in.from.store);
  if (step.outputs) note_store(step.outputs->to.store);
  if (!regions.empty()) env.push_back(env_var("AWS_DEFAULT_REGION", *regions.begin()));
  const Pool* pool = sys.pool(step.pool);
  if (pool && pool->rdma) env.push_back(env_var("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64"));
  for (const auto& [k, v] : step.env) env.push_back(env_var(k, v));
  c["env"] = env;
  if (!secrets.empty()) {
    ojson from = ojson::array();
    for (const auto& s : secrets) from.push_back(ojson{{"secretRef", {{"name", s}}}});
    c["envFrom"] = from;
  }
  if (step.distributed())
    c["ports"] = ojson::array({{{"name", k8s::kPortName}, {"containerPort", rendezvous_port(step.run)}}});
  ojson requests = ojson::object(), limits = ojson::object();
  for (const auto& [k, v] : step.resources.requests) requests[k] = v;
  for (const auto& [k, v] : step.resources.limits) limits[k] = v;
  if (step.gpus > 0) {
    requests["nvidia.com/gpu"] = step.gpus;
    limits["nvidia.com/gpu"] = step.gpus;
  }
  if (pool && pool->tpu) {
    requests["google.com/tpu"] = pool->tpu->chips_per_host;
    limits["google.com/tpu"] = pool->tpu->chips_per_host;
  }
  ojson res = ojson::object();
  if (!requests.empty()) res["requests"] = requests;
  if (!limits.empty()) res["limits"] = limits;
  if (!res.empty()) c["resources"] = res;
  ojson mounts = ojson::array({
      {{"name", "entrypoint"}, {"mountPath", k8s::kEntrypointDir}, {"readOnly", true}},
      {{"name", "shm"}, {"mountPath", "/dev/shm"}},
  });
  for (const auto& m : step.mounts)
    mounts.push_back({{"name", k8s::mount_volume(m)}, {"mountPath", m.path}, {"readOnly", m.read_only}});
  if (pool && pool->rdma) {
    mounts.push_back({{"name", "nvidia"}, {"mountPath", "/usr/local/nvidia"}});
    mounts.push_back({{"name", "gib"}, {"mountPath", "/usr/local/gib"}});
  }
  c["volumeMounts"] = mounts;
  // Liveness judges the heartbeat's age, never a file written only at the end of a run.
  const std::string ready_file = fmt::format("{}/ready", k8s::kStateDir);
  auto trainrt_probes = [&](std::vector<std::string> ready_paths) {
    c["livenessProbe"] =
        exec_argv(trainrt::exec_argv(trainrt::probe_live(step.heartbeat.file, step.heartbeat.max_age_seconds)), 60, 3);
    ready_paths.insert(ready_paths.begin(), ready_file);
    c["readinessProbe"] = exec_argv(trainrt::exec_argv(trainrt::probe_ready(ready_paths)), 15, 1);
  };
  // A user image may lack trainrt: its probes are shell, on the same files.
  auto shell_probes = [&] {
    c["livenessProbe"] = exec_probe(fmt::format("test $(( $(date +%s) - $(stat -c %Y {}) )) -lt {}", step.heartbeat.file,
                                                step.heartbeat.max_age_seconds),
                                    60, 3);
    c["readinessProbe"] = exec_probe(fmt::format("test -f {}", ready_file), 15, 1);
  };
  // Liveness judges the heartbeat's age, never a file written only at the end of a run.
  match(
      step.run, [&](const Torchrun&) { shell_probes(); }, [&](const Command&) { shell_probes(); },
      [&](const Datagen&) { trainrt_probes({}); },
      [&](const XGBoost& x) { trainrt_probes({x.from.pod_path}); });
  return c;
}

/// A GCS bucket as a CSI ephemeral volume of the GCS FUSE driver.
ojson gcsfuse_volume(const Mount& m) {
  std::string options = "implicit-dirs";
  if (!m.only_dir.empty()) options += ",only-dir=" + m.only_dir;
  return {{"name", k8s::mount_volume(m)},
          {"csi",
           {{"driver", "gcsfuse.csi.storage.gke.io"},
            {"readOnly", m.read_only},
            {"volumeAttributes", {{"bucketName", m.bucket}, {"mountOptions", options}}}}}};
}

/// eth0 on the default network, then one NIC per GPU on the RDMA networks rdma-0, rdma-1, ...
std::string rdma_interfaces(int gpus) {
  // Written with spaces after commas so the YAML writer can fold the line.
  std::string out = R"([{"interfaceName": "eth0", "network": "default"})";
  for (int i = 0; i < gpus; ++i)
    out += fmt::format(R"(, {{"interfaceName": "eth{}", "network": "rdma-{}"}})", i + 1, i);
  return out + "]";
}

ojson job(const System& sys, const Step& step, const k8s::Object& obj, const std::string& configmap) {
  ojson j;
  j["apiVersion"] = obj.api_version;
  j["kind"] = obj.kind;
  j["metadata"] = metadata(obj.name, sys.ns, step_labels(sys, step));
  if (!step.annotations.empty()) j["metadata"]["annotations"] = step.annotations;
  ojson spec;
  // A failed rank takes the others down with it, so one retry of the step costs `nodes` pod failures.
  spec["backoffLimit"] = static_cast<long long>(step.retries) * step.nodes;
  if (step.distributed()) {
    spec["completions"] = step.nodes;
    spec["parallelism"] = step.nodes;
    spec["completionMode"] = "Indexed";
  }
  if (step.timeout_seconds) spec["activeDeadlineSeconds"] = *step.timeout_seconds;
  ojson pod;
  pod["restartPolicy"] = "Never";
  if (step.distributed()) pod["subdomain"] = k8s::job_name(sys, step);
  if (!sys.pod_service_account().empty()) pod["serviceAccountName"] = sys.pod_service_account();
  const Pool* p = sys.pool(step.pool);
  ojson selector = ojson::object();
  if (p) {
    selector["cloud.google.com/gke-nodepool"] = p->name;
    if (p->accelerator && step.gpus > 0) selector["cloud.google.com/gke-accelerator"] = p->accelerator->type;
    if (p->tpu) {
      selector["cloud.google.com/gke-tpu-accelerator"] = p->tpu->accelerator;
      selector["cloud.google.com/gke-tpu-topology"] = p->tpu->topology;
    }
  }
  if (!selector.empty()) pod["nodeSelector"] = selector;
  ojson tolerations = ojson::array();
  if (step.gpus > 0) tolerations.push_back({{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
  if (p && p->tpu) tolerations.push_back({{"key", "google.com/tpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
  if (p)
    for (const auto& t : p->taints) {
      if (t.value.empty()) tolerations.push_back({{"key", t.key}, {"operator", "Exists"}, {"effect", t.effect}});
      else tolerations.push_back({{"key", t.key}, {"operator", "Equal"}, {"value", t.value}, {"effect", t.effect}});
    }
  if (!tolerations.empty()) pod["tolerations"] = tolerations;
  // Room for the final sync of outputs, or the last checkpoint write, after SIGTERM.
  if (step.outputs || step.checkpoints) pod["terminationGracePeriodSeconds"] = 300;
  pod["containers"] = ojson::array({container(sys, step)});
  ojson volumes = ojson::array({
      {{"name", "entrypoint"}, {"configMap", {{"name", configmap}, {"defaultMode", 0555}}}},
      {{"name", "shm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", step.shm}}}},
  });
  for (const auto& m : step.mounts) volumes.push_back(gcsfuse_volume(m));
  if (p && p->rdma) {
    // The host's NVIDIA driver and the gIB NCCL plugin, as GKE installs them on A4 and A3 Ultra nodes.
    volumes.push_back({{"name", "nvidia"}, {"hostPath", {{"path", "/home/kubernetes/bin/nvidia"}}}});
    volumes.push_back({{"name", "gib"}, {"hostPath", {{"path", "/home/kubernetes/bin/gib"}}}});
  }
  pod["volumes"] = volumes;
  ojson pod_meta{{"labels", step_labels(sys, step)}};
  ojson annotations = ojson::object();
  if (!step.mounts.empty()) annotations["gke-gcsfuse/volumes"] = "true";
  if (p && p->rdma) {
    annotations["networking.gke.io/default-interface"] = "eth0";
    annotations["networking.gke.io/interfaces"] = rdma_interfaces(p->accelerator ? p->accelerator->count : 0);
  }
  if (!annotations.empty()) pod_meta["annotations"] = annotations;
  spec["template"] = {{"metadata", pod_meta}, {"spec", pod}};
  j["spec"] = spec;
  return j;
}

ojson headless_service(const System& sys, const Step& step, const k8s::Object& obj) {
  ojson s;
  s["apiVersion"] = obj.api_version;
  s["kind"] = obj.kind;
  s["metadata"] = metadata(obj.name, sys.ns, step_labels(sys, step));
  int port = rendezvous_port(step.run);
  s["spec"] = {
      {"clusterIP", "None"},
      // Ranks must resolve each other before any of them is Ready.
      {"publishNotReadyAddresses", true},
      {"selector", {{"app.kubernetes.io/instance", k8s::job_name(sys, step)}, {"app.kubernetes.io/part-of", sys.name}}},
      {"ports", ojson::array({{{"name", k8s::kPortName}, {"port", port}, {"targetPort", port}}})},
  };
  return s;
}

ojson typed(const k8s::Object& obj) { return {{"apiVersion", obj.api_version}, {"kind", obj.kind}}; }

/// One object of the plan, built for its role.
ojson build(const System& sys, const k8s::Object& obj, const k8s::Workload* w) {
  switch (obj.role) {
    case k8s::Role::kNamespace: {
      ojson ns = typed(obj);
      ns["metadata"] = metadata(obj.name, "", labels_for(sys, sys.name, sys.name, "namespace"));
      return ns;
    }
    case k8s::Role::kServiceAccount: {
      ojson sa = typed(obj);
      sa["metadata"] = metadata(obj.name, sys.ns, labels_for(sys, sys.name, sys.name, "identity"));
      sa["metadata"]["annotations"] = {{"iam.gke.io/gcp-service-account", sys.identity->gsa_email(*sys.gcp)}};
      return sa;
    }
    case k8s::Role::kEntryScript: {
      ojson cm = typed(obj);
      cm["metadata"] = metadata(obj.name, sys.ns, step_labels(sys, *w->step));
      cm["data"] = {{"entrypoint.sh", w->entry_script}};
      return cm;
    }
    case k8s::Role::kRendezvous: return headless_service(sys, *w->step, obj);
    case k8s::Role::kBatchJob: {
      std::string configmap;
      for (const auto& o : w->objects)
        if (o.role == k8s::Role::kEntryScript) configmap = o.name;
      return job(sys, *w->step, obj, configmap);
    }
  }
  throw std::logic_error("unknown object role");
}

class K8sEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "k8s"; }

  void emit(const System& sys, const k8s::Plan& plan, OutputSink& out) const override {
    std::vector<std::string> resources;  // relative to k8s/, as kustomize wants them
    auto add = [&](const k8s::Object& obj, const k8s::Workload* w) {
      out.add(obj.file, to_yaml(build(sys, obj, w), header(sys, obj.what)));
      resources.push_back(obj.file.substr(4));
    };
    for (const auto& obj : plan.shared) add(obj, nullptr);
    for (const auto& w : plan.workloads)
      for (const auto& obj : w.objects) add(obj, &w);
    ojson k{{"apiVersion", "kustomize.config.k8s.io/v1beta1"}, {"kind", "Kustomization"}, {"resources", resources}};
    out.add(plan.kustomization, to_yaml(k, header(sys, "kustomization")));
  }
};

}  // namespace

std::unique_ptr<Emitter> new_k8s_emitter() { return std::make_unique<K8sEmitter>(); }

}  // namespace trainc
