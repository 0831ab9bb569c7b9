#include "k8s/rollout.h"

#include <doctest/doctest.h>

#include "commands/command.h"
#include "frontend/yaml_loader.h"
#include "model/lower.h"
#include "model/test_lowered.h"

namespace trainc {
namespace {

using testing::lowered;

/// prep, then two steps that both need it.
const char* kFanOut =
    "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
    "pipeline:\n"
    "  - {name: prep, image: i, command: [python, prep.py]}\n"
    "  - {name: small, image: i, needs: [prep], command: [python, small.py]}\n"
    "  - {name: large, image: i, needs: [prep, small], command: [python, large.py]}\n";

std::vector<RolloutStep::Kind> kinds(const Rollout& r) {
  std::vector<RolloutStep::Kind> out;
  for (const auto& s : r.steps) out.push_back(s.kind);
  return out;
}

}  // namespace

TEST_CASE("rollout: the shared objects, then each step after what it needs, each wait once") {
  System sys = lowered(kFanOut);
  const k8s::Plan plan = k8s::plan(sys);
  const Rollout r = make_rollout(sys, plan);
  using K = RolloutStep::Kind;
  CHECK(kinds(r) == std::vector<K>{K::kShared, K::kWorkload, K::kWorkload, K::kWorkload});
  CHECK(r.services_end() == 1);
  CHECK(r.steps[1].workload->name == "prep");
  CHECK(r.steps[1].waits.empty());
  REQUIRE(r.steps[2].waits.size() == 1);
  CHECK(k8s::kubectl_ref(*r.steps[2].waits[0]) == "job/sys-prep");
  // large needs prep (waited for already) and small.
  REQUIRE(r.steps[3].waits.size() == 1);
  CHECK(k8s::kubectl_ref(*r.steps[3].waits[0]) == "job/sys-small");
  CHECK(r.steps[3].files.back() == "k8s/large-job.yaml");
  // No chart to uninstall and no load balancer: the objects, then the infrastructure.
  REQUIRE(r.teardown.size() == 2);
  CHECK(r.teardown[0].kind == TeardownStep::Kind::kDeleteObjects);
  CHECK(r.teardown[1].kind == TeardownStep::Kind::kInfrastructure);
}

TEST_CASE("rollout: a server's store contents go before its objects; a server that needs none has no such step") {
  // The source is on GCS: lowering reads no folder.
  const std::string head =
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
      "storage:\n  models: {gcs: {bucket: b}}\n"
      "services:\n";
  using K = RolloutStep::Kind;
  System sys = lowered(head + "  a:\n    triton: {repository: 'models:/r', source: {from: 'gs://src/r'}}\n"
                              "  b:\n    triton: {repository: 'models:/s'}\n"
                              "  c:\n    triton: {repository: 'models:/t', models: [m]}\n");
  const k8s::Plan plan = k8s::plan(sys);
  const Rollout r = make_rollout(sys, plan);
  CHECK(kinds(r) == std::vector<K>{K::kShared, K::kContents, K::kService, K::kService, K::kContents, K::kService,
                                   K::kHealth});
  CHECK(r.steps[1].workload == r.steps[2].workload);
  CHECK(r.steps[1].workload->service->name == "a");
  CHECK(r.steps[4].workload->service->name == "c");
  const std::vector<StoreContents> c = r.steps[4].workload->service->store_contents();
  REQUIRE(c.size() == 1);
  CHECK(c[0].source == nullptr);
  REQUIRE(c[0].needs.size() == 1);
  CHECK(c[0].needs[0].path == "m/config.pbtxt");
  CHECK(c[0].folder->url == "gs://b/t");
  const std::vector<StoreContents> a = r.steps[1].workload->service->store_contents();
  REQUIRE(a.size() == 1);
  REQUIRE(a[0].source != nullptr);
  CHECK(a[0].source->gcs == "gs://src/r");
}

TEST_CASE("origin: a file beside the spec, as the output's scripts and runbook name it") {
  Origin o{"examples/triton-tpu/spec.jsonnet", "golden", ""};
  CHECK(o.spec_path_from("scripts", "triton-tpu", "models") == "../../../examples/triton-tpu/models");
  CHECK(o.spec_path_from("", "triton-tpu", "models/") == "../../examples/triton-tpu/models");
  // The output inside the spec's folder, and a spec at the repository's root.
  CHECK(Origin{"ml/spec.yaml", "ml/out", ""}.spec_path_from("scripts", "s", "repo") == "../../../repo");
  CHECK(Origin{"spec.yaml", "out", ""}.spec_path_from("", "s", ".") == "../..");
}

TEST_CASE("command: a script's command continues a flag a line; the runbook's stays on one") {
  const Operator op{"gateway", "https://charts.example/x", "1.2.3", "gw", "istio-ingress"};
  const KubeTarget script{"\"$KUBE_CONTEXT\"", "K8S_DIR", false}, runbook{"", "", true};
  CHECK(cmd::helm_install(runbook, op).line() ==
        "helm upgrade --install gw gateway --repo https://charts.example/x --version 1.2.3 --namespace istio-ingress "
        "--create-namespace --wait");
  const auto lines = cmd::helm_install(script, op).lines("run ");
  REQUIRE(lines.size() == 7);
  CHECK(lines[0] == "run helm upgrade --install gw gateway \\");
  CHECK(lines[1] == "    --repo=https://charts.example/x \\");
  CHECK(lines[5] == "    --kube-context=\"$KUBE_CONTEXT\" \\");
  CHECK(lines[6] == "    --wait");
  CHECK(cmd::helm_uninstall(runbook, op, false).line() == "helm uninstall gw --namespace istio-ingress");
  // Files: the output's names for the runbook, under $K8S_DIR for a script.
  CHECK(cmd::apply_files(runbook, {"k8s/a.yaml"}).line() == "kubectl apply -f k8s/a.yaml");
  CHECK(cmd::apply_files(script, {"k8s/a.yaml"}).line() ==
        "kubectl --context \"$KUBE_CONTEXT\" apply -f \"${K8S_DIR}/a.yaml\"");
  // Literals are quoted when the shell needs it; shell words are kept as written.
  CommandLine c = cmd::gcloud({"storage", "buckets", "create", "gs://my bucket"});
  c.opt("--location", "US").flag("--project", "\"$PROJECT_ID\"");
  CHECK(c.line() == "gcloud storage buckets create 'gs://my bucket' --location=US --project=\"$PROJECT_ID\"");
}

}  // namespace trainc
