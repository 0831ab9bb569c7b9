#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include "emit/emitter.h"
#include "emit/runs.h"
#include "k8s/entry_script.h"
#include "k8s/failure.h"
#include "k8s/plan.h"
#include "k8s/names.h"
#include "frontend/yaml_loader.h"
#include "model/catalog.h"
#include "model/lower.h"

#include <fmt/format.h>

namespace trainc {

static System two_node_system() {
  System sys;
  sys.name = "mnist";
  sys.ns = "mnist";
  Pool pool;
  pool.name = "gpu";
  pool.machine = "n1-standard-4";
  pool.accelerator = Accelerator{"nvidia-tesla-t4", 1};
  pool.nodes = 4;
  sys.pools["gpu"] = pool;
  Step s;
  s.name = "train";
  s.image = "img";
  s.no_retry_exit_codes = {kPreflightExit};  // as lowering leaves it
  s.pool = "gpu";
  s.nodes = 4;
  s.gpus = 1;
  s.procs_per_node = 1;
  s.run = Torchrun{"/workspace/mnist.py", {"--epochs=1"}, 3389};
  s.shm = "2Gi";
  sys.steps.push_back(s);
  return sys;
}

namespace {
/// The env of a container as name -> value ("(from a field)" for a fieldRef).
std::map<std::string, std::string> env_of(const YAML::Node& container) {
  std::map<std::string, std::string> vars;
  for (const auto& e : container["env"])
    vars[e["name"].as<std::string>()] = e["value"] ? e["value"].as<std::string>() : "(from a field)";
  return vars;
}
/// The one replicated Job of a gang's JobSet.
YAML::Node gang_job(const OutputSink& out, const std::string& file) {
  YAML::Node js = YAML::Load(out.files().at(file));
  REQUIRE(js["spec"]["replicatedJobs"].size() == 1);
  return js["spec"]["replicatedJobs"][0];
}
}  // namespace

TEST_CASE("a user's command on many nodes gets the same JobSet and environment") {
  System sys = two_node_system();
  sys.steps[0].run = Command{{"python3", "train.py"}};
  OutputSink out;
  new_k8s_emitter()->emit(sys, k8s::plan(sys), out);
  YAML::Node rj = gang_job(out, "k8s/train-jobset.yaml");
  CHECK(rj["name"].as<std::string>() == "node");
  rj = rj["template"];
  CHECK(rj["spec"]["completionMode"].as<std::string>() == "Indexed");
  CHECK(rj["spec"]["completions"].as<int>() == 4);
  std::map<std::string, std::string> vars = env_of(rj["spec"]["template"]["spec"]["containers"][0]);
  CHECK(vars["NNODES"] == "4");
  CHECK(vars["NODE_RANK"] == "(from a field)");
  CHECK(vars["MASTER_ADDR"] == "mnist-train-node-0-0.mnist-train");
  CHECK(vars["MASTER_PORT"] == "29500");
  // A command is not torchrun: no torch settings of trainc's.
  CHECK_FALSE(vars.contains("TORCH_NCCL_ASYNC_ERROR_HANDLING"));
  CHECK_FALSE(out.files().contains("k8s/train-service.yaml"));  // JobSet makes the headless Service
}

TEST_CASE("a multi-node step is a gang: a JobSet of one Indexed Job, restarted whole") {
  System sys = two_node_system();
  OutputSink out;
  new_k8s_emitter()->emit(sys, k8s::plan(sys), out);
  YAML::Node js = YAML::Load(out.files().at("k8s/train-jobset.yaml"));
  CHECK(js["kind"].as<std::string>() == "JobSet");
  CHECK(js["spec"]["network"]["enableDNSHostnames"].as<bool>());
  CHECK_FALSE(js["metadata"]["annotations"]);  // exclusive placement per node pool is TPU's
  YAML::Node fp = js["spec"]["failurePolicy"];
  CHECK(fp["maxRestarts"].as<int>() == 2);
  CHECK(fp["restartStrategy"].as<std::string>() == "BlockingRecreate");
  REQUIRE(fp["rules"].size() == 2);  // no timeout: no timeout rule
  CHECK(fp["rules"][0]["action"].as<std::string>() == "RestartJobSetAndIgnoreMaxRestarts");
  CHECK(fp["rules"][0]["onJobFailureMessagePatterns"][0].as<std::string>() == k8s::kDisruptionMessage);
  CHECK(fp["rules"][1]["action"].as<std::string>() == "FailJobSet");
  CHECK(fp["rules"][1]["onJobFailureMessagePatterns"][0].as<std::string>() == k8s::kExitCodeMessage);
  CHECK(js["spec"]["replicatedJobs"][0]["replicas"].as<int>() == 1);
  YAML::Node rj = js["spec"]["replicatedJobs"][0]["template"];
  CHECK(rj["spec"]["completions"].as<int>() == 4);
  CHECK(rj["spec"]["parallelism"].as<int>() == 4);
  CHECK(rj["spec"]["backoffLimit"].as<int>() == 0);
  YAML::Node pfp = rj["spec"]["podFailurePolicy"]["rules"];
  REQUIRE(pfp.size() == 2);
  CHECK(pfp[0]["action"].as<std::string>() == "FailJob");
  CHECK(pfp[0]["onPodConditions"][0]["type"].as<std::string>() == "DisruptionTarget");
  CHECK(pfp[1]["onExitCodes"]["containerName"].as<std::string>() == "train");
  CHECK(pfp[1]["onExitCodes"]["values"].as<std::vector<int>>() == std::vector<int>{78});
  auto pod = rj["spec"]["template"]["spec"];
  CHECK_FALSE(pod["subdomain"]);  // JobSet sets it
  CHECK(pod["nodeSelector"]["cloud.google.com/gke-accelerator"].as<std::string>() == "nvidia-tesla-t4");
  std::map<std::string, std::string> vars = env_of(pod["containers"][0]);
  CHECK(vars["MASTER_ADDR"] == "mnist-train-node-0-0.mnist-train");
  CHECK(vars["MASTER_PORT"] == "3389");
  CHECK(vars["NNODES"] == "4");
  CHECK(vars["PYTHONUNBUFFERED"] == "1");
  CHECK(vars["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1");
  CHECK(pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"].as<int>() == 1);
  // Only the first pod's quiet-by-design log is judged by the liveness probe.
  const std::string live = pod["containers"][0]["livenessProbe"]["exec"]["command"][2].as<std::string>();
  CHECK(live.starts_with("test \"${NODE_RANK:-0}\" != 0 || "));

  YAML::Node kust = YAML::Load(out.files().at("k8s/kustomization.yaml"));
  CHECK(kust["resources"].size() == 3);  // namespace, entry script, JobSet
}

TEST_CASE("a pod alone ignores disruptions and fails its Job on a no-retry exit code") {
  System sys = two_node_system();
  Step& step = sys.steps[0];
  step.nodes = 1;
  step.retries = 5;
  step.no_retry_exit_codes = {2, 78};
  step.timeout_seconds = 3600;
  OutputSink out;
  new_k8s_emitter()->emit(sys, k8s::plan(sys), out);
  YAML::Node job = YAML::Load(out.files().at("k8s/train-job.yaml"));
  CHECK(job["spec"]["backoffLimit"].as<int>() == 5);  // a retry is one pod's failure
  YAML::Node rules = job["spec"]["podFailurePolicy"]["rules"];
  REQUIRE(rules.size() == 2);
  CHECK(rules[0]["action"].as<std::string>() == "Ignore");
  CHECK(rules[0]["onPodConditions"][0]["type"].as<std::string>() == "DisruptionTarget");
  CHECK(rules[1]["action"].as<std::string>() == "FailJob");
  CHECK(rules[1]["onExitCodes"]["operator"].as<std::string>() == "In");
  CHECK(rules[1]["onExitCodes"]["values"].as<std::vector<int>>() == std::vector<int>{2, 78});
  const std::string live =
      job["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["exec"]["command"][2].as<std::string>();
  CHECK(live.starts_with("test $(( $(date +%s)"));  // one pod: judged always
}

TEST_CASE("independent shards are an Indexed Job retried per index, not a gang") {
  System sys = two_node_system();
  Step& step = sys.steps[0];
  step.gpus = 0;
  Datagen shards;
  shards.shards = 8;
  step.run = shards;
  CHECK_FALSE(step.gang());
  CHECK(k8s::plan(sys).workload("train")->done().kind == "Job");
}

TEST_CASE("a step on a pool of TPU slices may run on any of its node pools") {
  System sys = two_node_system();
  Pool tpu;
  tpu.name = "v5e";
  tpu.machine = "ct5lp-hightpu-4t";
  tpu.tpu = TpuSlice{"v5e", "tpu-v5-lite-podslice", "2x4", 4, 2};
  tpu.nodes = 2;
  sys.pools = {{"v5e", tpu}};
  Step& step = sys.steps[0];
  step.pool = "v5e";
  step.nodes = 2;
  step.gpus = 0;

  auto pod_of = [](const System& s) {
    OutputSink out;
    new_k8s_emitter()->emit(s, k8s::plan(s), out);
    // A TPU step is a JobSet: its pods are those of the slice Job's template.
    return YAML::Load(out.files().at("k8s/train-jobset.yaml"))["spec"]["replicatedJobs"][0]["template"]["spec"]
                                                               ["template"]["spec"];
  };
  auto one = pod_of(sys);
  CHECK(one["nodeSelector"]["cloud.google.com/gke-nodepool"].as<std::string>() == "v5e");
  CHECK_FALSE(one["affinity"]);

  sys.pools["v5e"].tpu->slices = 2;
  auto pod = pod_of(sys);
  CHECK_FALSE(pod["nodeSelector"]["cloud.google.com/gke-nodepool"]);
  CHECK(pod["nodeSelector"]["cloud.google.com/gke-tpu-accelerator"].as<std::string>() == "tpu-v5-lite-podslice");
  CHECK(pod["nodeSelector"]["cloud.google.com/gke-tpu-topology"].as<std::string>() == "2x4");
  auto term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  REQUIRE(term.size() == 1);
  auto in = term[0]["matchExpressions"];
  REQUIRE(in.size() == 1);
  CHECK(in[0]["key"].as<std::string>() == "cloud.google.com/gke-nodepool");
  CHECK(in[0]["operator"].as<std::string>() == "In");
  CHECK(in[0]["values"].as<std::vector<std::string>>() == std::vector<std::string>{"v5e-0", "v5e-1"});
}

TEST_CASE("TPU pods run as root, whatever their image's user, as the README's security table says") {
  System sys = two_node_system();
  Pool tpu;
  tpu.name = "v5e";
  tpu.machine = "ct5lp-hightpu-4t";
  tpu.tpu = TpuSlice{"v5e", "tpu-v5-lite-podslice", "2x4", 4, 1};
  tpu.nodes = 2;
  sys.pools = {{"v5e", tpu}};
  Step& step = sys.steps[0];
  step.pool = "v5e";
  step.gpus = 0;
  step.security.level = PodSecurityLevel::kBaseline;
  step.security.reason = "JAX opens the TPU devices";
  sys.runtime_image = step.image;  // an image whose user trainc knows: 10001, not root
  OutputSink out;
  new_k8s_emitter()->emit(sys, k8s::plan(sys), out);
  new_runbook_emitter()->emit(sys, k8s::plan(sys), out);
  YAML::Node pod = YAML::Load(out.files().at("k8s/train-jobset.yaml"))["spec"]["replicatedJobs"][0]["template"]
                                                                           ["spec"]["template"]["spec"];
  CHECK(pod["securityContext"]["runAsUser"].as<int>() == 0);
  CHECK(pod["securityContext"]["runAsGroup"].as<int>() == 0);
  CHECK(out.files().at("README.md").find("| step `train` | `jobset/mnist-train` | baseline | root (UID 0) |") !=
        std::string::npos);
}

TEST_CASE("pods on RDMA pools set NCCL up for gIB first; pods elsewhere do not") {
  const std::string script = catalog().rdma().nccl_env_script;
  REQUIRE(script.starts_with("/usr/local/gib/"));
  System sys = two_node_system();
  sys.steps[0].run = Command{{"python3", "train.py"}};
  CHECK(entry_script(sys, sys.steps[0]).find(script) == std::string::npos);
  sys.pools["gpu"].rdma = true;
  const std::string entry = entry_script(sys, sys.steps[0]);
  const size_t at = entry.find(". \"$ROOT\"" + script);
  REQUIRE(at != std::string::npos);
  CHECK(at < entry.find("\"${trainer[@]}\""));  // before the first NCCL user, the trainer
  CHECK(entry.find("set +u") < at);   // the upstream script may read unset variables
}

TEST_CASE("a step's run is named by what it runs, and by the runs of the steps it needs") {
  System sys = two_node_system();
  Step eval = sys.steps[0];
  eval.name = "eval";
  eval.nodes = 1;
  eval.needs = {"train"};
  sys.steps.push_back(eval);
  Step other = sys.steps[0];
  other.name = "other";
  other.nodes = 1;
  sys.steps.push_back(other);
  auto runs = [&] {
    name_runs(sys);
    std::vector<std::string> out;
    for (const auto& st : sys.steps) out.push_back(st.run_id);
    return out;
  };
  const auto first = runs();
  for (const auto& r : first) CHECK(r.size() == size_t(k8s::kHashLength));
  CHECK(runs() == first);  // the same spec names the same runs
  CHECK(k8s::job_name(sys, sys.steps[0]) == "mnist-train-" + first[0]);
  CHECK(k8s::configmap_name(sys, sys.steps[0]) == k8s::job_name(sys, sys.steps[0]));
  // A changed step is a new run, and so is every step after it; a step beside it is not.
  std::get<Torchrun>(sys.steps[0].run).args.push_back("--lr=0.1");
  const auto second = runs();
  CHECK(second[0] != first[0]);
  CHECK(second[1] != first[1]);
  CHECK(second[2] == first[2]);
  // Its objects name the run: the Job, the ConfigMap its pods mount, the pods' labels.
  OutputSink out;
  new_k8s_emitter()->emit(sys, k8s::plan(sys), out);
  YAML::Node js = YAML::Load(out.files().at("k8s/train-jobset.yaml"));
  CHECK(js["metadata"]["name"].as<std::string>() == "mnist-train-" + second[0]);
  CHECK(js["metadata"]["labels"]["trainc.dev/run"].as<std::string>() == second[0]);
  CHECK(js["metadata"]["labels"]["trainc.dev/step"].as<std::string>() == "train");
  YAML::Node job = js["spec"]["replicatedJobs"][0]["template"];
  CHECK(job["spec"]["template"]["metadata"]["labels"]["trainc.dev/run"].as<std::string>() == second[0]);
  // Its pods resolve each other under the JobSet's name, the run's.
  CHECK(k8s::master_addr(sys, sys.steps[0]) == fmt::format("mnist-train-{0}-node-0-0.mnist-train-{0}", second[0]));
  YAML::Node cm = YAML::Load(out.files().at("k8s/train-configmap.yaml"));
  CHECK(cm["metadata"]["name"].as<std::string>() == "mnist-train-" + second[0]);
}

TEST_CASE("a run id is never a number to a YAML reader, so no tool drops its label's quotes") {
  // The digest that named gpt-a4-tas's tokenize run "540e781626", which kustomize wrote as null.
  CHECK(k8s::run_id("540e781626abcdef") == "40e781626a");
  CHECK(k8s::run_id("1234567890fedcba") == "234567890f");
  CHECK(k8s::run_id("0b01010101cafe") == "b01010101c");
  CHECK(k8s::run_id("0123456789abcdef") == "123456789a");
  CHECK(k8s::run_id("abc0123456789") == "abc0123456");  // the first window when it is a string
  CHECK(k8s::run_id("00000e00000") == "r00000e000");   // no window left: a letter makes it a string
}

TEST_CASE("torchrun flags derive from nodes and GPUs") {
  System sys = two_node_system();
  auto words = trainer_words(sys.steps[0]);
  CHECK(std::find(words.begin(), words.end(), "--node-rank=\"$NODE_RANK\"") != words.end());
  CHECK(std::find(words.begin(), words.end(), "--nproc-per-node=1") != words.end());
  sys.steps[0].nodes = 1;
  words = trainer_words(sys.steps[0]);
  CHECK(std::find(words.begin(), words.end(), "--standalone") != words.end());
}

}  // namespace trainc

namespace trainc {

/// For every TPU machine and topology of the catalog: lowered from a spec, a step on the slice
/// becomes a JobSet whose pods per slice times chips per pod is the topology's chip count.
TEST_CASE("every catalog TPU topology gives a JobSet with all of the slice's chips") {
  int checked = 0;
  for (const std::string& type : catalog().machine_names()) {
    const MachineType* m = catalog().machine(type);
    if (m->tpu_chips == 0) continue;
    for (const std::string& topology : m->tpu_topologies) {
      CAPTURE(type);
      CAPTURE(topology);
      const std::string spec = fmt::format(
          "apiVersion: trainc/v1\nkind: TrainingSystem\nname: tpu\n"
          "cluster:\n  pools:\n    slice: {{machine: {}, tpu: {{topology: '{}'}}}}\n"
          "pipeline:\n  - {{name: train, pool: slice, image: img, command: [python3, train.py]}}\n",
          type, topology);
      Diagnostics diags;
      auto doc = load_yaml(std::make_shared<SourceFile>("s.yaml", spec), diags);
      REQUIRE(doc);
      auto sys = lower(*doc, diags);
      REQUIRE_MESSAGE(sys, diags.render_text());
      OutputSink out;
      new_k8s_emitter()->emit(*sys, k8s::plan(*sys), out);
      REQUIRE(out.files().count("k8s/train-jobset.yaml"));
      YAML::Node js = YAML::Load(out.files().at("k8s/train-jobset.yaml"));
      YAML::Node job = js["spec"]["replicatedJobs"][0]["template"]["spec"];
      const int pods = job["parallelism"].as<int>();
      CHECK(job["completions"].as<int>() == pods);
      const int chips = job["template"]["spec"]["containers"][0]["resources"]["limits"]["google.com/tpu"].as<int>();
      CHECK(pods * chips == topology_chips(topology));
      CHECK(job["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"].as<std::string>() == topology);
      ++checked;
    }
  }
  CHECK(checked > 10);
}

}  // namespace trainc

namespace trainc {

/// A Ray worker group on an RDMA pool starts Ray only after the gIB plugin's NCCL settings are
/// sourced; the head, on a pool without RDMA, keeps KubeRay's own command line.
TEST_CASE("Ray pods on RDMA pools source the gIB NCCL settings before ray start") {
  const std::string spec =
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: rr\n"
      "cluster:\n  pools:\n    system: {machine: e2-standard-8}\n"
      "    a4: {machine: a4-highgpu-8g, rdma: true, nodes: 2}\n"
      "clusters:\n  ray:\n    engine: ray\n    image: rayproject/ray:2.52.0-py310-gpu\n"
      "    security: {level: privileged, reason: hostPath}\n"
      "    head: {pool: system}\n    workers:\n      gpu: {pool: a4, replicas: 2}\n"
      "pipeline:\n  - {name: train, cluster: ray, command: [python, train.py]}\n";
  Diagnostics diags;
  auto doc = load_yaml(std::make_shared<SourceFile>("s.yaml", spec), diags);
  REQUIRE(doc);
  auto sys = lower(*doc, diags);
  REQUIRE_MESSAGE(sys, diags.render_text());
  OutputSink out;
  new_k8s_emitter()->emit(*sys, k8s::plan(*sys), out);
  REQUIRE(out.files().count("k8s/cluster-ray-raycluster.yaml"));
  YAML::Node rc = YAML::Load(out.files().at("k8s/cluster-ray-raycluster.yaml"));
  YAML::Node head = rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0];
  YAML::Node worker = rc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0];
  CHECK_FALSE(head["command"]);
  REQUIRE(worker["command"]);
  // KubeRay prefixes its `ulimit …; ray start …` with this command and `&&`, in one bash -c.
  CHECK(worker["command"].as<std::vector<std::string>>() ==
        std::vector<std::string>{".", catalog().rdma().nccl_env_script});
  CHECK_FALSE(worker["args"]);
  CHECK(rc["spec"]["workerGroupSpecs"][0]["template"]["metadata"]["annotations"]["networking.gke.io/interfaces"]);
}


TEST_CASE("a step that syncs with S3 gets the AWS CLI from trainc's init container unless its image has it") {
  System sys = two_node_system();
  Store bucket;
  bucket.name = "bucket";
  bucket.bucket = "b";
  sys.stores["bucket"] = bucket;
  Step& step = sys.steps[0];
  step.nodes = 1;  // a Job of one pod
  step.inputs.push_back({{"bucket", "/data/", "s3://b/data/", ""}, "/workspace/data", ""});
  auto pod_of = [&] {
    OutputSink out;
    new_k8s_emitter()->emit(sys, k8s::plan(sys), out);
    return YAML::Load(out.files().at("k8s/train-job.yaml"))["spec"]["template"]["spec"];
  };
  YAML::Node pod = pod_of();
  REQUIRE(pod["initContainers"].size() == 1);
  CHECK(pod["initContainers"][0]["image"].as<std::string>().starts_with("amazon/aws-cli:"));
  CHECK(pod["initContainers"][0]["resources"]["requests"]["memory"]);
  bool mounted = false;
  for (const auto& m : pod["containers"][0]["volumeMounts"])
    mounted |= m["mountPath"].as<std::string>() == std::string(k8s::kToolsDir);
  CHECK(mounted);
  CHECK(entry_script(sys, step).find("PATH=/opt/trainc-tools/aws:\"$PATH\"") != std::string::npos);
  // The same step with nothing to sync brings nothing.
  step.inputs.clear();
  CHECK_FALSE(pod_of()["initContainers"]);
  CHECK(entry_script(sys, step).find("trainc-tools") == std::string::npos);
}

TEST_CASE("a pod whose uid its image does not name gets HOME, USER and LOGNAME; one whose image names it does not") {
  System sys = two_node_system();
  sys.steps[0].nodes = 1;  // a Job of one pod
  auto env_of = [&] {
    OutputSink out;
    new_k8s_emitter()->emit(sys, k8s::plan(sys), out);
    std::map<std::string, std::string> env;
    for (const auto& e : YAML::Load(out.files().at("k8s/train-job.yaml"))["spec"]["template"]["spec"]["containers"][0]["env"])
      if (e["value"]) env[e["name"].as<std::string>()] = e["value"].as<std::string>();
    return env;
  };
  sys.steps[0].image = "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime";  // root only: uid 1000 unknown to it
  auto env = env_of();
  CHECK(env["HOME"] == "/tmp");
  CHECK(env["USER"] == "trainc");
  CHECK(env["LOGNAME"] == "trainc");
  sys.steps[0].image = "rayproject/ray:2.52.0-py310-gpu";  // runs as ray, uid 1000, HOME /home/ray
  env = env_of();
  CHECK(env.count("HOME") == 0);
  CHECK(env.count("USER") == 0);
  sys.steps[0].env["USER"] = "me";  // the spec's own value wins
  sys.steps[0].image = "img";
  env = env_of();
  CHECK(env["USER"] == "me");
  CHECK(env["LOGNAME"] == "trainc");
}

}  // namespace trainc
