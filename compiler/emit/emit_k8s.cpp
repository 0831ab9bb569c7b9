// Kubernetes target: every object of the plan (k8s/plan.h) under k8s/, and a
// kustomization.yaml listing them in apply order.
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "base/overloaded.h"
#include "base/units.h"
#include "emit/emitter.h"
#include "k8s/clusters.h"
#include "k8s/failure.h"
#include "k8s/names.h"
#include "k8s/prerequisites.h"
#include "model/catalog.h"
#include "model/checkpoints.h"
#include "model/failure.h"
#include "k8s/pod.h"
#include "model/images.h"
#include "k8s/queue.h"
#include "k8s/services.h"
#include "quoting/shell.h"
#include "commands/trainrt_command.h"
#include "base/yaml_writer.h"

namespace trainc {
namespace {

using ojson = nlohmann::ordered_json;
using k8s::env_var;
using k8s::labels_for;
using k8s::metadata;

k8s::PodNeeds needs_of(const System& sys, const Step& step) {
  return k8s::needs_for(sys, sys.pool(step.pool), step.gpus, step.shm, &step.mounts, step.image, step.security);
}

/// Folders a restricted step writes that its image may not let its UID write, as emptyDir volumes
/// (name, path): for trainrt steps, whose image is read-only, /tmp and the workdir; for other steps
/// whose image trainc did not build, where inputs are synced to and outputs written: the workdir
/// too when a sync targets it, since the step then fills it from the store (the image's own
/// workdir is its user's, often root's, and the sync would fail there). Not under a writable GCS
/// mount, which is the store's.
std::vector<std::pair<std::string, std::string>> scratch_dirs(const Step& step, const k8s::PodNeeds& n) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!n.restricted()) return out;
  if (step.uses_trainrt()) {
    out.push_back({"tmp", "/tmp"});
    out.push_back({"workdir", step.workdir});
    return out;
  }
  if (n.known_image) return out;  // its Dockerfile makes these folders the image user's
  std::vector<std::string> dirs;
  for (const auto& in : step.inputs) dirs.push_back(in.to);
  if (step.outputs) dirs.push_back(step.outputs->path);
  if (step.checkpoints) dirs.push_back(step.checkpoints->path);
  std::sort(dirs.begin(), dirs.end());
  std::vector<std::string> kept;
  for (const auto& d : dirs) {
    auto inside = [&](const std::string& root) { return d == root || d.starts_with(root + "/"); };
    if (d == "/" || inside("/tmp")) continue;
    if (!kept.empty() && inside(kept.back())) continue;  // already under an earlier one
    // A writable GCS mount holds it already (a second volume at one path the API server refuses:
    // "Duplicate value" of volumeMounts[].mountPath).
    if (std::any_of(step.mounts.begin(), step.mounts.end(), [&](const Mount& m) { return !m.read_only && inside(m.path); }))
      continue;
    kept.push_back(d);
  }
  for (size_t i = 0; i < kept.size(); ++i) out.push_back({fmt::format("scratch-{}", i), kept[i]});
  return out;
}

ojson step_labels(const System& sys, const Step& step) { return k8s::run_labels(sys, step, step.kind()); }

std::string header(const System& sys, std::string_view what) {
  return fmt::format("{}\n{} of system '{}'", kGeneratedNotice, what, sys.name);
}

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
  const Pool* pool = sys.pool(step.pool);
  const bool tpu = pool && pool->tpu;
  if (tpu) {
    // GKE gives TPU pods of a JobSet their TPU_WORKER_ID and TPU_WORKER_HOSTNAMES. The entry script
    // knows a pod by its host index in its slice.
    env.push_back(k8s::env_field("NODE_RANK", "metadata.annotations['batch.kubernetes.io/job-completion-index']"));
    if (step.multislice()) {
      const int port = catalog().megascale_port();
      env.push_back(env_var("MEGASCALE_NUM_SLICES", std::to_string(step.slices)));
      env.push_back(k8s::env_field("MEGASCALE_SLICE_ID", "metadata.labels['jobset.sigs.k8s.io/job-index']"));
      env.push_back(env_var("MEGASCALE_COORDINATOR_ADDRESS",
                            fmt::format("{}:{}", k8s::jobset_coordinator(sys, step), port)));
      env.push_back(env_var("MEGASCALE_PORT", std::to_string(port)));
    }
  } else {
    k8s::add_env(env, k8s::rendezvous_env(sys, step));
  }
  // The run the pod belongs to (its label, set once the run is named): a run resumes from its own
  // checkpoints only.
  // A scheduled step's run is each Job its CronJob makes: one night's run does not resume another's.
  if (runs_keep_apart(step))
    env.push_back(k8s::env_field("TRAINC_RUN", fmt::format("metadata.labels['{}']", step.schedule ? "batch.kubernetes.io/job-name"
                                                                                                   : k8s::kRunLabel)));
  std::set<std::string> regions;
  auto note_store = [&](const std::string& store) {
    if (const auto* s = sys.store(store); s && !s->region.empty()) regions.insert(s->region);
  };
  for (const auto& in : step.inputs) note_store(in.from.store);
  if (step.outputs) note_store(step.outputs->to.store);
  if (!regions.empty()) env.push_back(env_var("AWS_DEFAULT_REGION", *regions.begin()));
  const k8s::PodNeeds needs = needs_of(sys, step);
  k8s::add_node_env(env, needs, step.env);
  // A Dask client finds its scheduler here; a RayJob runs in its cluster.
  if (const ComputeCluster* on = sys.compute_cluster(step.cluster))
    match(
        on->engine, [](const Ray&) {},
        [&](const Dask&) { env.push_back(env_var("DASK_SCHEDULER_ADDRESS", k8s::dask_scheduler_address(sys, *on))); });
  if (step.gpus > 0 && step.distributed() && step.runs_torchrun()) {
    // A collective that times out (the process group's timeout) ends the process instead of
    // hanging: torch before 2.2 left this off. Both spellings: torch 2.2 renamed it.
    for (const char* name : {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"})
      if (!step.env.contains(name) && !step.secret_env.contains(name)) env.push_back(env_var(name, "1"));
  }
  for (const auto& [k, v] : step.env) env.push_back(env_var(k, v));
  k8s::add_secret_env(env, step.secret_env);
  c["env"] = env;
  // The S3 stores' credentials, every key an environment variable the AWS CLI reads.
  if (const std::set<std::string> secrets = k8s::store_secrets(sys, step); !secrets.empty()) {
    ojson from = ojson::array();
    for (const auto& s : secrets) from.push_back(ojson{{"secretRef", {{"name", s}}}});
    c["envFrom"] = from;
  }
  if (step.distributed() && !tpu)
    c["ports"] = ojson::array({{{"name", k8s::kPortName}, {"containerPort", rendezvous_port(step.run)}}});
  if (ojson res = k8s::resources(step.resources, needs); !res.empty()) c["resources"] = res;
  ojson sc = k8s::container_security(needs);
  // trainrt writes only to its folders: the image itself stays read-only.
  if (step.uses_trainrt() && needs.restricted()) sc["readOnlyRootFilesystem"] = true;
  c["securityContext"] = sc;
  ojson mounts = ojson::array({{{"name", "entrypoint"}, {"mountPath", k8s::kEntrypointDir}, {"readOnly", true}}});
  k8s::add_volume_mounts(mounts, needs);
  for (const auto& [name, path] : scratch_dirs(step, needs))
    mounts.push_back({{"name", name}, {"mountPath", path}});
  c["volumeMounts"] = mounts;
  const std::string ready_file = fmt::format("{}/ready", k8s::kStateDir);
  auto trainrt_probes = [&](std::vector<std::string> ready_paths) {
    c["livenessProbe"] =
        exec_argv(trainrt::exec_argv(trainrt::probe_live(step.heartbeat.file, step.heartbeat.max_age_seconds)), 60, 3);
    ready_paths.insert(ready_paths.begin(), ready_file);
    c["readinessProbe"] = exec_argv(trainrt::exec_argv(trainrt::probe_ready(ready_paths)), 15, 1);
  };
  // A user image may lack trainrt: its probes are shell, on the same files.
  auto shell_probes = [&] {
    std::string fresh = fmt::format("test $(( $(date +%s) - $(stat -c %Y {}) )) -lt {}", sh_quote(step.heartbeat.file),
                                    step.heartbeat.max_age_seconds);
    // In a gang, only the first pod's log shows progress (ranks but 0 rarely print). Every rank
    // waits in the same collectives, so a stall stops that log too, and that pod's failure
    // restarts the gang: the others are not judged by a log that is quiet by design.
    if (step.distributed() && k8s::runs_as_jobset(sys, step) && step.heartbeat.file == kStepLogPath)
      fresh = fmt::format("test \"${{NODE_RANK:-0}}\" != 0 || test \"${{MEGASCALE_SLICE_ID:-0}}\" != 0 || {}", fresh);
    c["livenessProbe"] = exec_probe(fresh, 60, 3);
    c["readinessProbe"] = exec_probe(fmt::format("test -f {}", sh_quote(ready_file)), 15, 1);
  };
  // Liveness judges the heartbeat's age, never a file written only at the end of a run.
  match(
      step.run, [&](const Torchrun&) { shell_probes(); }, [&](const Command&) { shell_probes(); },
      [&](const Datagen&) { trainrt_probes({}); },
      [&](const XGBoost& x) { trainrt_probes({x.from.pod_path}); });
  return c;
}

/// The pod template of a step's Job (or of each Job of its JobSet).
ojson pod_template(const System& sys, const Step& step, const std::string& configmap, bool jobset) {
  ojson pod;
  pod["restartPolicy"] = "Never";
  if (step.distributed() && !jobset) pod["subdomain"] = k8s::job_name(sys, step);  // a JobSet sets its own
  if (step.multislice()) {
    // Slices talk over the data-center network: the host's NICs, as GKE's multislice setup runs them.
    pod["hostNetwork"] = true;
    pod["dnsPolicy"] = "ClusterFirstWithHostNet";
  }
  if (!sys.pod_service_account().empty()) pod["serviceAccountName"] = sys.pod_service_account();
  const k8s::PodNeeds needs = needs_of(sys, step);
  k8s::place(pod, needs);
  k8s::secure_pod(pod, needs);
  // Room for the final sync of outputs, or the last checkpoint write, after SIGTERM.
  if (step.outputs || step.checkpoints) pod["terminationGracePeriodSeconds"] = kSyncGraceSeconds;
  ojson main = container(sys, step);
  const std::vector<const InjectedTool*> tools = injected_tools(sys, step);
  if (!tools.empty()) {
    // Tools the image may lack (the AWS CLI for the S3 syncs), copied from trainc's pinned images into
    // a folder the step's container mounts; its entry script uses them only when the image has none.
    ojson inits = ojson::array();
    for (const InjectedTool* t : tools) {
      ojson c;
      c["name"] = "trainc-tools-" + t->name;
      c["image"] = t->image;
      c["imagePullPolicy"] = "IfNotPresent";
      c["command"] = {"/bin/sh", "-c",
                      fmt::format("cp -R {} {}", sh_quote(t->copy), sh_quote(fmt::format("{}/{}", k8s::kToolsDir, t->bin)))};
      ojson req{{"cpu", t->cpu}, {"memory", t->memory}};
      c["resources"] = {{"requests", req}, {"limits", req}};
      c["securityContext"] = k8s::container_security(needs);
      c["volumeMounts"] = ojson::array({{{"name", "trainc-tools"}, {"mountPath", std::string(k8s::kToolsDir)}}});
      inits.push_back(c);
    }
    pod["initContainers"] = inits;
    main["volumeMounts"].push_back(
        {{"name", "trainc-tools"}, {"mountPath", std::string(k8s::kToolsDir)}, {"readOnly", true}});
  }
  pod["containers"] = ojson::array({main});
  ojson volumes = ojson::array({{{"name", "entrypoint"}, {"configMap", {{"name", configmap}, {"defaultMode", 0555}}}}});
  if (!tools.empty()) volumes.push_back({{"name", "trainc-tools"}, {"emptyDir", ojson::object()}});
  k8s::add_volumes(volumes, needs);
  for (const auto& [name, _] : scratch_dirs(step, needs)) volumes.push_back({{"name", name}, {"emptyDir", ojson::object()}});
  pod["volumes"] = volumes;
  ojson pod_meta{{"labels", k8s::batch_pod_labels(sys, step_labels(sys, step))}};
  if (ojson annotations = k8s::pod_annotations(needs); !annotations.empty()) pod_meta["annotations"] = annotations;
  // One Kueue PodSet: the Job's pods, or all slices' pods of the JobSet's one replicated Job.
  k8s::ask_topology(pod_meta, topology_request(sys, step));
  return {{"metadata", pod_meta}, {"spec", pod}};
}

ojson job(const System& sys, const Step& step, const k8s::Object& obj, const std::string& configmap) {
  ojson j;
  j["apiVersion"] = obj.api_version;
  j["kind"] = obj.kind;
  j["metadata"] = metadata(obj.name, sys.ns, k8s::queued(sys, step_labels(sys, step)));
  ojson annotations = step.annotations.empty() ? ojson::object() : ojson(step.annotations);
  annotations.update(k8s::provisioning_annotations(sys, step));
  if (!annotations.empty()) j["metadata"]["annotations"] = annotations;
  ojson spec;
  if (step.distributed()) {
    // Independent shards (a gang is a JobSet): each index is retried on its own.
    spec["completions"] = step.nodes;
    spec["parallelism"] = step.nodes;
    spec["completionMode"] = "Indexed";
    spec["backoffLimitPerIndex"] = step.retries;
  } else {
    spec["backoffLimit"] = step.retries;
  }
  spec["podFailurePolicy"] = k8s::pod_failure_policy(step, false);
  if (step.timeout_seconds) spec["activeDeadlineSeconds"] = *step.timeout_seconds;
  spec["template"] = pod_template(sys, step, configmap, false);
  j["spec"] = spec;
  return j;
}

/// A step on a schedule: a CronJob whose Jobs are the step's Job. The Jobs and their pods carry
/// the CronJob's name (k8s::kScheduleLabel), which apply.sh's run pruning leaves to the CronJob's
/// own history limits; Kueue reads its queue label on the Job template, as on a Job.
ojson cron_job(const System& sys, const Step& step, const k8s::Object& obj, const std::string& configmap) {
  const Schedule& sc = *step.schedule;
  ojson made = job(sys, step, obj, configmap);
  const std::string label(k8s::kScheduleLabel);
  ojson job_meta{{"labels", made["metadata"]["labels"]}};
  job_meta["labels"][label] = obj.name;
  if (made["metadata"].contains("annotations")) job_meta["annotations"] = made["metadata"]["annotations"];
  made["spec"]["template"]["metadata"]["labels"][label] = obj.name;
  ojson cj = typed(obj);
  cj["metadata"] = metadata(obj.name, sys.ns, step_labels(sys, step));
  cj["spec"] = {{"schedule", sc.cron},
                {"timeZone", sc.time_zone},
                {"startingDeadlineSeconds", sc.starting_deadline_seconds},
                {"concurrencyPolicy", sc.replace ? "Replace" : "Forbid"},
                {"successfulJobsHistoryLimit", step.history},
                {"failedJobsHistoryLimit", step.history},
                {"jobTemplate", {{"metadata", job_meta}, {"spec", made["spec"]}}}};
  return cj;
}

/// A TPU step (one Indexed Job per slice, `nodes` pods each, one per host) or a gang (one Indexed
/// Job, a pod per node), started together and restarted together: synchronous training cannot go
/// on without a host. A failed pod fails its Job at once (backoffLimit 0) and the JobSet restarts
/// every Job (k8s/failure.h): a disruption without counting it, up to `retries` times otherwise.
ojson jobset(const System& sys, const Step& step, const k8s::Object& obj, const std::string& configmap) {
  ojson js = typed(obj);
  js["metadata"] = metadata(obj.name, sys.ns, k8s::queued(sys, step_labels(sys, step)));
  ojson annotations = step.annotations.empty() ? ojson::object() : ojson(step.annotations);
  annotations.update(k8s::provisioning_annotations(sys, step));
  const Pool* pool = sys.pool(step.pool);
  // One slice's Job per GKE node pool: a slice's hosts share its ICI links.
  if (pool && pool->tpu) annotations["alpha.jobset.sigs.k8s.io/exclusive-topology"] = "cloud.google.com/gke-nodepool";
  if (!annotations.empty()) js["metadata"]["annotations"] = annotations;
  ojson job_spec;
  job_spec["parallelism"] = step.nodes;
  job_spec["completions"] = step.nodes;
  job_spec["completionMode"] = "Indexed";
  job_spec["backoffLimit"] = 0;
  job_spec["podFailurePolicy"] = k8s::pod_failure_policy(step, true);
  if (step.timeout_seconds) job_spec["activeDeadlineSeconds"] = *step.timeout_seconds;
  job_spec["template"] = pod_template(sys, step, configmap, true);
  js["spec"] = {{"failurePolicy", k8s::jobset_failure_policy(step)},
                {"network", {{"enableDNSHostnames", true}}},
                {"replicatedJobs", ojson::array({{{"name", std::string(k8s::replicated_job(sys, step))},
                                                   {"replicas", step.slices},
                                                   // the slice Jobs carry the step's labels: watch and status find them
                                                   {"template", {{"metadata", {{"labels", step_labels(sys, step)}}},
                                                                 {"spec", job_spec}}}}})}};
  return js;
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

using k8s::typed;

/// On each node of an RDMA pool, a privileged init container installs the gIB NCCL plugin into the
/// host folders the training pods mount (/home/kubernetes/bin/gib and nvidia/lib64); a pause
/// container then keeps the pod, so a new node is served as soon as it joins.
ojson gib_installer(const System& sys, const k8s::Object& obj) {
  const RdmaLayout& r = catalog().rdma();
  std::vector<std::string> pools;
  bool arm = false;
  for (const auto& [_, p] : sys.pools)
    if (p.rdma) {
      for (const auto& np : p.node_pools()) pools.push_back(np);
      arm = arm || p.arm;
    }
  ojson labels = labels_for(sys, "gib-installer", obj.name, "network");
  ojson ds = typed(obj);
  ds["metadata"] = metadata(obj.name, std::string(k8s::kGibInstallerNamespace), labels);
  const std::string lib = "/home/kubernetes/bin/nvidia/lib64", gib = "/home/kubernetes/bin/gib";
  ojson install = {
      {"name", "install"},
      {"image", r.gib_image + (arm ? r.gib_arm_suffix : "")},
      {"command", {"/bin/sh", "-c"}},
      {"args", {fmt::format("set -ex\n/scripts/container_entry.sh install\ncp -r /var/lib/gib/lib64/. "
                            "/host{}\ncp -r /var/lib/gib/. /host{}\n",
                            lib, gib)}},
      {"securityContext", {{"privileged", true}}},
      {"resources", {{"requests", {{"cpu", r.gib_cpu}}}}},
      {"volumeMounts", {{{"name", "nvidia-lib"}, {"mountPath", "/host" + lib}}, {{"name", "gib"}, {"mountPath", "/host" + gib}}}}};
  ojson pod;
  pod["priorityClassName"] = "system-node-critical";
  pod["hostNetwork"] = true;
  pod["hostPID"] = true;
  pod["affinity"] = {{"nodeAffinity",
                      {{"requiredDuringSchedulingIgnoredDuringExecution",
                        {{"nodeSelectorTerms",
                          {{{"matchExpressions",
                             {{{"key", "cloud.google.com/gke-nodepool"}, {"operator", "In"}, {"values", pools}}}}}}}}}}}};
  pod["tolerations"] = ojson::array({{{"operator", "Exists"}}});
  pod["initContainers"] = ojson::array({install});
  pod["containers"] = ojson::array({{{"name", "pause"}, {"image", r.pause_image}}});
  pod["volumes"] = ojson::array({{{"name", "nvidia-lib"}, {"hostPath", {{"path", lib}, {"type", "DirectoryOrCreate"}}}},
                                 {{"name", "gib"}, {"hostPath", {{"path", gib}, {"type", "DirectoryOrCreate"}}}}});
  ds["spec"] = {{"selector", {{"matchLabels", {{"app.kubernetes.io/instance", obj.name}}}}},
                {"updateStrategy", {{"type", "RollingUpdate"}}},
                {"template", {{"metadata", {{"labels", labels}}}, {"spec", pod}}}};
  return ds;
}

/// One object of the plan, built for its role.
ojson build(const System& sys, const k8s::Object& obj, const k8s::Workload* w) {
  switch (obj.role) {
    case k8s::Role::kNamespace: {
      ojson ns = typed(obj);
      ojson labels = labels_for(sys, sys.name, sys.name, "namespace");
      if (sys.istio) labels["istio-injection"] = "enabled";  // batch pods opt out (batch_pod_labels)
      // Pod Security Admission enforces the strictest level every pod here meets, and warns and
      // audits at restricted, so each exception shows (the README lists them with their reasons).
      labels["pod-security.kubernetes.io/enforce"] = std::string(level_name(k8s::namespace_level(sys)));
      labels["pod-security.kubernetes.io/warn"] = "restricted";
      labels["pod-security.kubernetes.io/audit"] = "restricted";
      ns["metadata"] = metadata(obj.name, "", labels);
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
    case k8s::Role::kDaskService: return k8s::dask_service(sys, *w->cluster, obj);
    case k8s::Role::kDaskScheduler: return k8s::dask_scheduler(sys, *w->cluster, obj);
    case k8s::Role::kDaskWorkers: return k8s::dask_workers(sys, *w->cluster, obj);
    case k8s::Role::kRayCluster: return k8s::ray_cluster(sys, *w->cluster, obj);
    case k8s::Role::kRayJob: return k8s::ray_job(sys, *w->step, obj);
    case k8s::Role::kNetworkParams: {
      ojson params = typed(obj);
      params["metadata"] = metadata(obj.name, "", labels_for(sys, sys.name, sys.name, "network"));
      if (obj.nic == k8s::kGvnicNic)  // a gVNIC NIC is a plain network device in the pod
        params["spec"] = {{"vpc", k8s::gvnic_vpc(sys)}, {"vpcSubnet", k8s::gvnic_subnet(sys)}, {"deviceMode", "NetDevice"}};
      else
        params["spec"] = {{"vpc", k8s::rdma_vpc(sys)}, {"vpcSubnet", k8s::rdma_subnet(sys, obj.nic)}, {"deviceMode", "RDMA"}};
      return params;
    }
    case k8s::Role::kGibInstaller: return gib_installer(sys, obj);
    case k8s::Role::kNetwork: {
      ojson net = typed(obj);
      net["metadata"] = metadata(obj.name, "", labels_for(sys, sys.name, sys.name, "network"));
      net["spec"] = {{"type", "Device"},
                     {"parametersRef", {{"group", "networking.gke.io"}, {"kind", "GKENetworkParamSet"}, {"name", obj.name}}}};
      return net;
    }
    case k8s::Role::kGateway: return k8s::gateway(sys, obj);
    case k8s::Role::kServiceIdentity: return k8s::service_account(sys, *w->service, obj);
    case k8s::Role::kServer: return k8s::server_deployment(sys, *w->service, obj);
    case k8s::Role::kServerService: return k8s::server_service(sys, *w->service, obj);
    case k8s::Role::kDisruptionBudget: return k8s::disruption_budget(sys, *w->service, obj);
    case k8s::Role::kPodMonitoring: return k8s::pod_monitoring(sys, *w->service, obj);
    case k8s::Role::kAutoscaler: return k8s::autoscaler(sys, *w->service, obj);
    case k8s::Role::kVirtualService: return k8s::virtual_service(sys, *w->service, obj);
    case k8s::Role::kTopology: return k8s::topology(sys, obj);
    case k8s::Role::kResourceFlavor: return k8s::resource_flavor(sys, obj);
    case k8s::Role::kProvisioningConfig: return k8s::provisioning_config(sys, obj);
    case k8s::Role::kAdmissionCheck: return k8s::admission_check(sys, obj);
    case k8s::Role::kClusterQueue: return k8s::cluster_queue(sys, obj);
    case k8s::Role::kLocalQueue: return k8s::local_queue(sys, obj);
    case k8s::Role::kBatchJob:
    case k8s::Role::kCronJob:
    case k8s::Role::kJobSet: {
      std::string configmap;
      for (const auto& o : w->objects)
        if (o.role == k8s::Role::kEntryScript) configmap = o.name;
      if (obj.role == k8s::Role::kCronJob) return cron_job(sys, *w->step, obj, configmap);
      return obj.role == k8s::Role::kJobSet ? jobset(sys, *w->step, obj, configmap) : job(sys, *w->step, obj, configmap);
    }
  }
  throw std::logic_error("unknown object role");
}

class K8sEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "k8s"; }

  void emit(const System& sys, const Planned& plan, OutputSink& out) const override {
    std::vector<std::string> resources;  // relative to k8s/, as kustomize wants them
    auto add = [&](const k8s::Object& obj, const k8s::Workload* w) {
      out.add(obj.file, to_yaml(build(sys, obj, w), header(sys, obj.what)));
      resources.push_back(obj.file.substr(4));
    };
    for (const auto& obj : plan.shared) add(obj, nullptr);
    for (const auto& w : plan.clusters)
      for (const auto& obj : w.objects) add(obj, &w);
    for (const auto& w : plan.services)
      for (const auto& obj : w.objects) add(obj, &w);
    for (const auto& w : plan.workloads)
      for (const auto& obj : w.objects) add(obj, &w);
    ojson k{{"apiVersion", "kustomize.config.k8s.io/v1beta1"}, {"kind", "Kustomization"}, {"resources", resources}};
    out.add(plan.kustomization, to_yaml(k, header(sys, "kustomization")));
  }
};

}  // namespace

std::unique_ptr<Emitter> new_k8s_emitter() { return std::make_unique<K8sEmitter>(); }

nlohmann::ordered_json k8s_object(const System& sys, const k8s::Object& obj, const k8s::Workload* w) {
  return build(sys, obj, w);
}

}  // namespace trainc
