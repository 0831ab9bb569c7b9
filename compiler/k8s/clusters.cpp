#include "k8s/clusters.h"

#include <stdexcept>

#include <fmt/format.h>

#include "commands/dask_command.h"
#include "k8s/names.h"
#include "k8s/queue.h"
#include "quoting/shell.h"
#include "base/yaml_writer.h"

namespace trainc::k8s {
namespace {

ojson cluster_labels(const System& sys, const ComputeCluster& c, const std::string& instance, const std::string& component) {
  return labels_for(sys, c.name, instance, component, c.labels);
}

const PodGroup& group_named(const ComputeCluster& c, const std::string& name) {
  for (const auto& g : c.workers)
    if (g.name == name) return g;
  throw std::logic_error("cluster '" + c.name + "' has no worker group '" + name + "'");
}

PodNeeds needs_of(const System& sys, const ComputeCluster& c, const PodGroup& g) {
  PodNeeds n = needs_for(sys, sys.pool(g.pool), g.gpus, g.shm, &c.mounts, c.image, c.security);
  // Ray's in-tree autoscaler runs beside the head and scales worker groups through the API.
  if (&g == &c.lead()) n.api_access = c.head_uses_api();
  return n;
}

ojson port(const std::string& name, int number) { return {{"name", name}, {"containerPort", number}}; }

/// A container of the cluster: image, env, ports, resources and mounts of `g`.
ojson cluster_container(const System& sys, const ComputeCluster& c, const PodGroup& g, const std::string& name,
                        ojson ports) {
  const PodNeeds n = needs_of(sys, c, g);
  ojson ct;
  ct["name"] = name;
  ct["image"] = c.image;
  ct["imagePullPolicy"] = c.image_pull_policy;
  ojson env = ojson::array({env_field(std::string(dask::kPodNameVar), "metadata.name")});
  add_node_env(env, n, c.env);
  for (const auto& [k, v] : c.env) env.push_back(env_var(k, v));
  add_secret_env(env, c.secret_env);
  ct["env"] = env;
  if (!ports.empty()) ct["ports"] = std::move(ports);
  if (ojson res = resources(g.resources, n); !res.empty()) ct["resources"] = res;
  ct["securityContext"] = container_security(n);
  ojson mounts = ojson::array();
  add_volume_mounts(mounts, n);
  ct["volumeMounts"] = mounts;
  return ct;
}

/// The pod template of `g` around `container`.
ojson pod_template(const System& sys, const ComputeCluster& c, const PodGroup& g, ojson labels, ojson container) {
  const PodNeeds n = needs_of(sys, c, g);
  ojson pod;
  if (!sys.pod_service_account().empty()) pod["serviceAccountName"] = sys.pod_service_account();
  place(pod, n);
  secure_pod(pod, n);
  pod["containers"] = ojson::array({std::move(container)});
  ojson volumes = ojson::array();
  add_volumes(volumes, n);
  pod["volumes"] = volumes;
  ojson meta{{"labels", batch_pod_labels(sys, std::move(labels))}};
  if (ojson a = pod_annotations(n); !a.empty()) meta["annotations"] = a;
  return {{"metadata", meta}, {"spec", pod}};
}

ojson deployment(const System& sys, const ComputeCluster& c, const Object& obj, const PodGroup& g, const std::string& component,
                 ojson container) {
  ojson labels = cluster_labels(sys, c, obj.name, component);
  ojson d = typed(obj);
  d["metadata"] = metadata(obj.name, sys.ns, labels);
  d["spec"] = {{"replicas", g.replicas},
               {"selector", {{"matchLabels", {{"app.kubernetes.io/instance", obj.name}, {"app.kubernetes.io/part-of", sys.name}}}}}};
  // Whole-node workers on a pool at its maximum leave no node for a surge pod: the plan says how
  // the pods are replaced then (k8s::Rollout).
  if (obj.rollout) d["spec"]["strategy"] = rolling_update(*obj.rollout);
  d["spec"]["template"] = pod_template(sys, c, g, labels, std::move(container));
  return d;
}

}  // namespace

std::string dask_scheduler_address(const System& sys, const ComputeCluster& c) {
  return fmt::format("tcp://{}:{}", dask_scheduler_name(sys, c), dask::kCommPort);
}

ojson dask_service(const System& sys, const ComputeCluster& c, const Object& obj) {
  const std::string scheduler = dask_scheduler_name(sys, c);
  ojson s = typed(obj);
  s["metadata"] = metadata(obj.name, sys.ns, cluster_labels(sys, c, scheduler, "dask-scheduler"));
  // Port names carry their protocol, so a service mesh routes them as they are.
  s["spec"] = {{"selector", {{"app.kubernetes.io/instance", scheduler}, {"app.kubernetes.io/part-of", sys.name}}},
               {"ports", ojson::array({{{"name", "tcp-comm"}, {"port", dask::kCommPort}, {"targetPort", "tcp-comm"}},
                                       {{"name", "http-dashboard"}, {"port", dask::kDashboardPort},
                                        {"targetPort", "http-dashboard"}}})}};
  return s;
}

ojson dask_scheduler(const System& sys, const ComputeCluster& c, const Object& obj) {
  const Dask& d = std::get<Dask>(c.engine);
  ojson ct = cluster_container(sys, c, d.scheduler, "scheduler",
                               ojson::array({port("tcp-comm", dask::kCommPort), port("http-dashboard", dask::kDashboardPort)}));
  ct["command"] = trainrt::container_argv(dask::scheduler());
  // Ready once it answers on its dashboard; alive while it accepts connections from workers.
  ct["readinessProbe"] = {{"httpGet", {{"path", "/health"}, {"port", "http-dashboard"}}}, {"periodSeconds", 10}};
  ct["livenessProbe"] = {{"tcpSocket", {{"port", "tcp-comm"}}}, {"periodSeconds", 20}, {"failureThreshold", 6}};
  return deployment(sys, c, obj, d.scheduler, "dask-scheduler", std::move(ct));
}

ojson dask_workers(const System& sys, const ComputeCluster& c, const Object& obj) {
  const Dask& d = std::get<Dask>(c.engine);
  const PodGroup& g = group_named(c, obj.group);
  ojson ct = cluster_container(sys, c, g, "worker", ojson::array());
  const auto argv = trainrt::container_argv(dask::worker(d, g, dask_scheduler_address(sys, c)));
  const Pool* pool = sys.pool(g.pool);
  ct["command"] = pool && pool->rdma ? with_nccl_env(argv) : argv;  // NCCL over gIB on RDMA pools
  return deployment(sys, c, obj, g, "dask-worker", std::move(ct));
}

namespace {

/// On an RDMA pool, has the Ray container source the gIB plugin's NCCL settings (catalog
/// rdma.ncclEnv) before `ray start`. KubeRay writes the container's command itself: a command given
/// here becomes the start of its `bash -c` line, joined to the generated `ulimit …; ray start …` by
/// `&&` (v1.7.0 common/pod.go, BuildPod), so the settings the script exports reach Ray's raylet and
/// every worker process it forks, and a script that fails keeps Ray from starting without them.
void source_nccl_env(ojson& container, const Pool* pool) {
  if (pool && pool->rdma) container["command"] = ojson::array({".", catalog().rdma().nccl_env_script});
}

/// A RayCluster's spec; `instance` labels its pods.
ojson ray_cluster_spec(const System& sys, const ComputeCluster& c, const std::string& instance) {
  const Ray& r = std::get<Ray>(c.engine);
  ojson spec;
  spec["rayVersion"] = r.version;
  ojson head = cluster_container(sys, c, r.head, "ray-head",
                                 ojson::array({port("gcs-server", 6379), port("dashboard", 8265), port("client", 10001)}));
  source_nccl_env(head, sys.pool(r.head.pool));
  // In-tree autoscaling exactly when the engine adds its autoscaler, which scales the worker groups
  // through the API with the head's token: when a worker group autoscales (workers_autoscale()
  // says only that Ray's groups may).
  if (c.head_uses_api()) {
    spec["enableInTreeAutoscaling"] = true;
    // KubeRay appends its autoscaler container to the head pod (the engine's added container) with
    // no securityContext unless one is given here (v1.7.0 common/pod.go, BuildAutoscalerContainer):
    // it gets the head container's, so a restricted namespace admits the pod, and the resources
    // the head's size already leaves room for.
    for (const AddedContainer& a : c.added_containers()) {
      if (a.name != "autoscaler") continue;
      spec["autoscalerOptions"] = {{"resources", {{"requests", a.requests}, {"limits", a.limits}}},
                                   {"securityContext", head["securityContext"]}};
    }
  }
  // rayStartParams are strings; the head takes no GPUs, so Ray schedules none of the work there.
  spec["headGroupSpec"] = {
      {"rayStartParams", {{"dashboard-host", "0.0.0.0"}, {"num-gpus", std::to_string(r.head.gpus)}}},
      {"template", pod_template(sys, c, r.head, cluster_labels(sys, c, instance, "ray-head"), std::move(head))}};
  ojson groups = ojson::array();
  for (const auto& g : c.workers) {
    ojson worker = cluster_container(sys, c, g, "ray-worker", ojson::array());
    source_nccl_env(worker, sys.pool(g.pool));
    groups.push_back({{"groupName", g.name},
                      {"replicas", g.replicas},
                      {"minReplicas", g.min},
                      {"maxReplicas", g.max},
                      {"rayStartParams", {{"num-gpus", std::to_string(g.gpus)}}},
                      {"template", pod_template(sys, c, g, cluster_labels(sys, c, instance, "ray-worker"), std::move(worker))}});
  }
  spec["workerGroupSpecs"] = groups;
  return spec;
}

}  // namespace

ojson ray_cluster(const System& sys, const ComputeCluster& c, const Object& obj) {
  ojson rc = typed(obj);
  rc["metadata"] = metadata(obj.name, sys.ns, cluster_labels(sys, c, obj.name, "ray-cluster"));
  rc["spec"] = ray_cluster_spec(sys, c, obj.name);
  // KubeRay changes no running pod when the spec changes: a new image or command would reach only
  // pods made later. With Recreate it deletes every pod once the spec's hash (replicas, min/max,
  // tolerations and scheduling gates left out) differs from the one the head pod was made with,
  // and makes them anew (v1.7.0 raycluster_controller.go, shouldRecreatePodsForUpgrade). Only on a
  // RayCluster of its own: KubeRay refuses it on one a RayJob makes (utils/validation.go).
  rc["spec"]["upgradeStrategy"] = {{"type", "Recreate"}};
  return rc;
}

namespace {

/// How KubeRay hands a RayJob's entrypoint to Ray (spec.submissionMode).
enum class RaySubmission {
  /// The operator posts the string to the head's job API (v1.7.0 utils/dashboard_httpclient.go,
  /// SubmitJob: `entrypoint` as written), and Ray's job supervisor runs it with
  /// subprocess.Popen(entrypoint, shell=True) (dashboard/modules/job/job_supervisor.py): one `sh -c`.
  kHttp,
  /// A submitter Job runs `bash -c "ray job submit … -- ENTRYPOINT"` as its container's args (the
  /// kubelet expands them first); Ray's CLI joins the words with list2cmdline for the same `sh -c`.
  kK8sJob,
};

/// The mode trainc asks for: the submitter Job of K8sJobMode gets no securityContext, nodeSelector
/// or tolerations from KubeRay (v1.7.0 common/job.go, GetDefaultSubmitterContainer), so a
/// restricted namespace refuses it and on tainted GPU pools it has nowhere to run.
constexpr RaySubmission kRaySubmission = RaySubmission::kHttp;

/// `argv` as the entrypoint string that arrives at Ray's `sh -c` as those words under `mode`.
std::string ray_entrypoint(const std::vector<std::string>& argv, RaySubmission mode) {
  switch (mode) {
    case RaySubmission::kHttp: return sh_join(argv);
    case RaySubmission::kK8sJob: return literal(sh_join_twice(argv));
  }
  throw std::logic_error("unknown Ray submission mode");
}

}  // namespace

std::string ray_job_entrypoint(const Step& step) {
  const std::vector<std::string>* argv = step.command_line();
  if (!argv) throw std::logic_error("a step on a Ray cluster runs a command");
  return ray_entrypoint(*argv, kRaySubmission);
}

ojson ray_job_runtime_env(const Step& step) {
  if (step.env.empty()) return nullptr;
  ojson env_vars = ojson::object();
  for (const auto& [k, v] : step.env) env_vars[k] = v;
  return ojson{{"env_vars", env_vars}};
}

ojson ray_job(const System& sys, const Step& step, const Object& obj) {
  const ComputeCluster& c = *sys.compute_cluster(step.cluster);
  ojson j = typed(obj);
  // Kueue admits a RayJob that brings its own cluster; one submitted to a shared, long-lived
  // cluster asks for no resources of its own, so it is not queued.
  const Ray& r = std::get<Ray>(c.engine);
  ojson labels = run_labels(sys, step, "ray-job");
  j["metadata"] = metadata(obj.name, sys.ns, r.per_job ? queued(sys, std::move(labels)) : std::move(labels));
  if (r.per_job) {
    // Kueue's ProvisioningRequest for a queued pool under the job's cluster takes its parameters from here.
    std::vector<std::string> pools{r.head.pool};
    for (const auto& g : c.workers) pools.push_back(g.pool);
    if (ojson a = provisioning_annotations(sys, step, pools); !a.empty()) j["metadata"]["annotations"] = std::move(a);
  }
  ojson spec;
  spec["entrypoint"] = ray_job_entrypoint(step);
  if (r.per_job) {
    // The job's own cluster: made with the job, deleted `ttl` after it finishes.
    spec["shutdownAfterJobFinishes"] = true;
    spec["ttlSecondsAfterFinished"] = r.ttl_after_finished;
    spec["rayClusterSpec"] = ray_cluster_spec(sys, c, obj.name);
    // Kueue makes a PodSet of the head and of each worker group (at its replicas).
    ask_topology(spec["rayClusterSpec"]["headGroupSpec"]["template"]["metadata"], sys, sys.pool(r.head.pool), 1);
    for (size_t i = 0; i < c.workers.size(); ++i)
      ask_topology(spec["rayClusterSpec"]["workerGroupSpecs"][i]["template"]["metadata"], sys, sys.pool(c.workers[i].pool),
                   c.workers[i].replicas);
  } else {
    spec["clusterSelector"] = {{"ray.io/cluster", cluster_name(sys, c)}};
  }
  if (const ojson env = ray_job_runtime_env(step); !env.is_null()) spec["runtimeEnvYAML"] = to_yaml(env, "");
  // KubeRay refuses backoffLimit with clusterSelector (checks/clusters.cpp): only a job that brings
  // its own cluster is retried.
  if (r.per_job) spec["backoffLimit"] = step.retries;
  spec["submissionMode"] = kRaySubmission == RaySubmission::kHttp ? "HTTPMode" : "K8sJobMode";
  if (step.timeout_seconds) spec["activeDeadlineSeconds"] = *step.timeout_seconds;
  j["spec"] = spec;
  return j;
}

}  // namespace trainc::k8s
