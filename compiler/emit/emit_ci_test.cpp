#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <algorithm>
#include <string>

#include <yaml-cpp/yaml.h>

#include "emit/ci.h"
#include "emit/emitter.h"
#include "frontend/yaml_loader.h"
#include "model/catalog.h"
#include "model/lower.h"
#include "model/test_lowered.h"

namespace trainc {
namespace {

constexpr const char* kSpecHead =
    "apiVersion: trainc/v1\nkind: TrainingSystem\nname: shop\n"
    "cluster:\n  pools:\n    t4: {machine: n1-standard-4, accelerator: {type: nvidia-tesla-t4, count: 1}, nodes: 2}\n";

/// A Triton service behind the gateway, autoscaled, reading a bucket trainc creates; a step whose
/// image is built (tag given, so no build context is read); both CI kinds.
std::string full_spec(const std::string& gcp = "{project: my-proj, region: us-central1, zone: us-central1-a, "
                                               "state: {bucket: my-proj-tf}}",
                      const std::string& ci =
                          "  github:\n"
                          "    workloadIdentityProvider: projects/123/locations/global/workloadIdentityPools/gh/providers/repo\n"
                          "    traincImage: us-docker.pkg.dev/my-proj/tools/trainc:0.1.0\n"
                          "    serviceAccount: deployer@my-proj.iam.gserviceaccount.com\n"
                          "    environment: production\n"
                          "  cloudbuild: {serviceAccount: builder@my-proj.iam.gserviceaccount.com, timeout: 1h, "
                          "machineType: e2-highcpu-8}\n") {
  return std::string(kSpecHead) + "gcp: " + gcp + "\n" +
         "storage:\n  models: {gcs: {bucket: shop-models}}\n"
         "istio: {}\n"
         "services:\n  triton:\n    pool: t4\n"
         "    triton: {repository: 'models:/repo', models: [densenet_onnx]}\n"
         "    autoscaling: {min: 1, max: 3}\n"
         "    expose: {gateway: {}}\n"
         "pipeline:\n  - name: train\n    pool: t4\n"
         "    build: {context: app, dockerfile: Dockerfile, tag: v1}\n"
         "    command: [python, train.py]\n"
         "ci:\n" + ci;
}

/// The spec's folder on disk, with the build context the specs name (lowering checks that a
/// build's files exist, even when the spec gives the tag).
std::string spec_path() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("trainc-ci-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d / "ml/shop/app");
    std::ofstream(d / "ml/shop/app/Dockerfile") << "FROM python:3.12-slim\n";
    std::ofstream(d / "ml/shop/app/train.py") << "print(1)\n";
    return d;
  }();
  return (dir / "ml/shop/spec.yaml").string();
}

System lowered(const std::string& spec, Origin origin = {"ml/shop/spec.yaml", "deploy"}) {
  System sys = testing::lowered(spec, spec_path());
  sys.origin = std::move(origin);
  return sys;
}

std::map<std::string, std::string> emit_ci(const System& sys) {
  OutputSink out;
  new_ci_emitter()->emit(sys, k8s::plan(sys), out);
  return out.files();
}

YAML::Node parse(const std::map<std::string, std::string>& files, const std::string& path) {
  auto it = files.find(path);
  REQUIRE_MESSAGE(it != files.end(), path);
  return YAML::Load(it->second);
}

std::vector<std::string> strings(const YAML::Node& seq) {
  std::vector<std::string> out;
  if (seq.IsScalar()) return {seq.as<std::string>()};
  for (const auto& n : seq) out.push_back(n.as<std::string>());
  return out;
}

/// Every `uses:` of a job.
std::vector<std::string> uses(const YAML::Node& job) {
  std::vector<std::string> out;
  for (const auto& s : job["steps"])
    if (s["uses"]) out.push_back(s["uses"].as<std::string>());
  return out;
}

/// The step of `job` whose run contains `part` (null when none).
YAML::Node run_step(const YAML::Node& job, const std::string& part) {
  for (const auto& s : job["steps"])
    if (s["run"] && s["run"].as<std::string>().find(part) != std::string::npos) return s;
  return YAML::Node(YAML::NodeType::Undefined);  // false in a condition, unlike a null node
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool has_role(const std::vector<CiRole>& roles, const std::string& role) {
  return std::any_of(roles.begin(), roles.end(), [&](const CiRole& r) { return r.role == role; });
}

}  // namespace

TEST_CASE("ci: nothing without `ci`") {
  System sys = lowered(std::string(kSpecHead) + "gcp: {project: my-proj, region: us-central1}\n"
                       "pipeline:\n  - {name: a, image: 'busybox:1.36', command: ['true']}\n");
  CHECK(emit_ci(sys).empty());
}

TEST_CASE("ci: paths come from the origin, normalised") {
  System sys = lowered(full_spec(), {"ml/shop/spec.yaml", "./deploy/"});
  CiPaths p = ci_paths(sys);
  CHECK(p.spec_dir == "ml/shop");
  CHECK(p.out_root == "deploy");
  CHECK(p.out == "deploy/shop");
  CHECK(p.workflow == "deploy/shop/ci/.github/workflows/shop.yaml");
  CHECK(p.workflow_copy == ".github/workflows/shop.yaml");
  const Build& b = sys.builds.at("train");
  CHECK(p.context(b) == "ml/shop/app");
  CHECK(p.dockerfile(b) == "ml/shop/app/Dockerfile");
  Build gen = b;
  gen.dockerfile.clear();
  CHECK(p.dockerfile(gen) == "deploy/shop/docker/train.Dockerfile");
  sys.origin = {"spec.yaml", ""};
  p = ci_paths(sys);
  CHECK(p.spec_dir == ".");
  CHECK(p.out == "shop");
  CHECK(p.context(b) == "app");
}

TEST_CASE("ci: the GitHub workflow's triggers, jobs, needs and permissions") {
  System sys = lowered(full_spec());
  auto files = emit_ci(sys);
  CHECK(files.size() == 3);
  const std::string& text = files.at("ci/.github/workflows/shop.yaml");
  CHECK(text.rfind("# " + std::string(kGeneratedNotice) + "\n", 0) == 0);
  YAML::Node wf = YAML::Load(text);
  YAML::Node on = wf["on"];
  REQUIRE(on);
  for (const char* event : {"pull_request", "push"}) {
    CHECK(strings(on[event]["branches"]) == std::vector<std::string>{"main"});
    CHECK(strings(on[event]["paths"]) ==
          std::vector<std::string>{"ml/shop/**", "deploy/shop/**", ".github/workflows/shop.yaml"});
  }
  CHECK(on["workflow_dispatch"]["inputs"]["run_pipeline"]["type"].as<std::string>() == "boolean");
  CHECK(on["workflow_dispatch"]["inputs"]["run_pipeline"]["default"].as<bool>() == false);
  CHECK(wf["permissions"]["contents"].as<std::string>() == "read");
  CHECK(wf["permissions"].size() == 1);
  CHECK(wf["env"]["PROJECT_ID"].as<std::string>() == "my-proj");
  CHECK(wf["env"]["REGION"].as<std::string>() == "us-central1");
  CHECK(wf["env"]["ZONE"].as<std::string>() == "us-central1-a");

  YAML::Node jobs = wf["jobs"];
  std::vector<std::string> names;
  for (const auto& j : jobs) names.push_back(j.first.as<std::string>());
  CHECK(names == std::vector<std::string>{"check", "plan", "images", "deploy"});
  // Each job stops at its bound, not GitHub's six hours: a hostile spec holds no runner.
  for (const auto& j : jobs) {
    REQUIRE_MESSAGE(j.second["timeout-minutes"], j.first.as<std::string>());
    CHECK(j.second["timeout-minutes"].as<int>() >= 10);
    CHECK(j.second["timeout-minutes"].as<int>() <= 360);
  }
  CHECK(jobs["check"]["timeout-minutes"].as<int>() <= 15);

  YAML::Node check = jobs["check"];
  CHECK(!check["needs"]);
  CHECK(!check["if"]);
  YAML::Node diff = run_step(check, " diff ");
  REQUIRE(diff);
  CHECK(diff["run"].as<std::string>() ==
        "docker run --rm -v \"$PWD:/src\" -w /src us-docker.pkg.dev/my-proj/tools/trainc:0.1.0"
            " diff ml/shop/spec.yaml --against deploy --diagnostics=github");
  CHECK(run_step(check, "cmp -s deploy/shop/ci/.github/workflows/shop.yaml .github/workflows/shop.yaml"));
  YAML::Node fmt = run_step(check, "terraform fmt -check -recursive");
  REQUIRE(fmt);
  CHECK(fmt["working-directory"].as<std::string>() == "src/deploy/shop/terraform");

  // Every job checks out into src/, leaving no token in .git/config, and runs its scripts there: the
  // auth action's credentials file lands in the workspace root, outside every build context.
  for (const auto& j : jobs) {
    CAPTURE(j.first.as<std::string>());
    CHECK(j.second["defaults"]["run"]["working-directory"].as<std::string>() == "src");
    size_t checkouts = 0, before_auth = 0;
    for (const auto& s : j.second["steps"]) {
      if (!s["uses"]) continue;
      const std::string uses = s["uses"].as<std::string>();
      if (uses == catalog().ci().checkout) {
        ++checkouts;
        // The plan job also checks out the base branch's output, inside the checkout (docker mounts it).
        CHECK(s["with"]["path"].as<std::string>() == (checkouts == 1 ? "src" : "src/.trainc-base"));
        if (checkouts > 1) CHECK(s["with"]["ref"].as<std::string>() == "${{ github.base_ref }}");
        CHECK(s["with"]["persist-credentials"].as<bool>() == false);
      }
      if (uses == catalog().ci().auth) before_auth = checkouts;
      if (uses == catalog().ci().auth) CHECK(before_auth == 1);  // the auth action needs the workspace
    }
    CHECK(checkouts == (j.first.as<std::string>() == "plan" ? 2u : 1u));
  }

  YAML::Node plan = jobs["plan"];
  CHECK(plan["if"].as<std::string>() == "github.event_name == 'pull_request'");
  CHECK(strings(plan["needs"]) == std::vector<std::string>{"check"});
  CHECK(plan["permissions"]["id-token"].as<std::string>() == "write");
  CHECK(plan["permissions"]["contents"].as<std::string>() == "read");
  CHECK(run_step(plan, "terraform init -input=false"));
  // What applying the change does, against the base branch's committed output.
  bool against = false;
  for (const auto& st : plan["steps"])
    if (st["run"] && st["run"].as<std::string>().find(" plan ") != std::string::npos &&
        st["run"].as<std::string>().find("--against .trainc-base/deploy/shop") != std::string::npos)
      against = true;
  CHECK(against);
  // And against the cluster as it is, where it exists: its credentials and diff --live only then;
  // as the deployer (no planner), with dry runs.
  YAML::Node there = run_step(plan, "gcloud container clusters describe shop");
  REQUIRE(there);
  CHECK(there["id"].as<std::string>() == "cluster");
  CHECK(contains(there["run"].as<std::string>(), "echo exists=true >>\"$GITHUB_OUTPUT\""));
  bool credentials = false;
  for (const auto& st : plan["steps"])
    if (st["uses"] && st["uses"].as<std::string>() == catalog().ci().gke_credentials) {
      credentials = true;
      CHECK(st["if"].as<std::string>() == "steps.cluster.outputs.exists == 'true'");
      CHECK(st["with"]["cluster_name"].as<std::string>() == "shop");
    }
  CHECK(credentials);
  YAML::Node live = run_step(plan, " diff --live ");
  REQUIRE(live);
  CHECK(live["if"].as<std::string>() == "steps.cluster.outputs.exists == 'true'");
  CHECK(contains(live["run"].as<std::string>(), "--kubeconfig /tmp/kubeconfig || rc=$?"));
  CHECK(!contains(live["run"].as<std::string>(), "--read-only"));
  CHECK(contains(live["run"].as<std::string>(), "elif [ \"$rc\" -gt 1 ]; then\n  exit \"$rc\""));
  CHECK(run_step(plan, "terraform plan -input=false -lock=false"));
  for (const auto& s : plan["steps"])
    if (s["uses"] && s["uses"].as<std::string>() == catalog().ci().auth) {
      CHECK(s["with"]["workload_identity_provider"].as<std::string>() ==
            "projects/123/locations/global/workloadIdentityPools/gh/providers/repo");
      CHECK(s["with"]["service_account"].as<std::string>() == "deployer@my-proj.iam.gserviceaccount.com");
    }

  // Pull requests build the images without signing in; the deploy pushes them once Terraform
  // has made the repository.
  YAML::Node images = jobs["images"];
  CHECK(strings(images["needs"]) == std::vector<std::string>{"check"});
  CHECK(images["if"].as<std::string>() == "github.event_name == 'pull_request'");
  CHECK(!images["permissions"]);
  YAML::Node build = run_step(images, "docker build");
  REQUIRE(build);
  CHECK(build["env"]["IMAGE"].as<std::string>() == sys.builds.at("train").image);
  CHECK(build["run"].as<std::string>() == "docker build -f ml/shop/app/Dockerfile -t \"$IMAGE\" ml/shop/app\n");
  CHECK(!run_step(images, "docker push"));

  YAML::Node deploy = jobs["deploy"];
  CHECK(deploy["if"].as<std::string>() == "github.event_name != 'pull_request' && github.ref == 'refs/heads/main'");
  CHECK(strings(deploy["needs"]) == std::vector<std::string>{"check"});
  {
    std::vector<std::string> order;
    for (const auto& s : deploy["steps"])
      if (s["run"]) order.push_back(s["run"].as<std::string>());
    auto at = [&](const std::string& part) {
      for (size_t i = 0; i < order.size(); ++i)
        if (contains(order[i], part)) return static_cast<int>(i);
      return -1;
    };
    CHECK(at("terraform apply") >= 0);
    CHECK(at("terraform apply") < at("gcloud auth configure-docker us-central1-docker.pkg.dev --quiet"));
    CHECK(at("configure-docker") < at("docker push \"$IMAGE\""));
    CHECK(at("gcloud artifacts docker images describe \"$IMAGE\"") == at("docker push"));
    CHECK(at("docker push") < at("--services-only"));
  }
  CHECK(deploy["environment"].as<std::string>() == "production");
  CHECK(deploy["concurrency"]["group"].as<std::string>() == "trainc-shop-deploy");
  CHECK(deploy["concurrency"]["cancel-in-progress"].as<bool>() == false);
  CHECK(deploy["permissions"]["id-token"].as<std::string>() == "write");
  CHECK(run_step(deploy, "terraform apply -input=false -auto-approve"));
  YAML::Node helm = run_step(deploy, "get.helm.sh");
  REQUIRE(helm);
  CHECK(contains(helm["run"].as<std::string>(), "helm-" + catalog().ci().helm_version + "-linux-amd64.tar.gz"));
  CHECK(contains(helm["run"].as<std::string>(), "sha256sum --check"));
  CHECK(contains(helm["run"].as<std::string>(), "command -v helm"));
  YAML::Node services = run_step(deploy, "--services-only");
  REQUIRE(services);
  CHECK(services["run"].as<std::string>() == "bash deploy/shop/scripts/apply.sh --services-only");
  bool full = false;
  for (const auto& s : deploy["steps"])
    if (s["run"] && s["run"].as<std::string>() == "bash deploy/shop/scripts/apply.sh") {
      full = true;
      CHECK(s["if"].as<std::string>() == "github.event_name == 'workflow_dispatch' && inputs.run_pipeline");
    }
  CHECK(full);
  for (const auto& s : deploy["steps"])
    if (s["uses"] && s["uses"].as<std::string>() == catalog().ci().setup_gcloud)
      CHECK(s["with"]["install_components"].as<std::string>() == "gke-gcloud-auth-plugin,kubectl");
}

TEST_CASE("ci: the check job signs in to Google Cloud before it pulls a private trainc image") {
  // The step index of the first step of `job` that uses `action` or whose run contains `part`.
  auto index = [](const YAML::Node& job, const std::string& action, const std::string& part) {
    int i = 0;
    for (const auto& s : job["steps"]) {
      if (!action.empty() && s["uses"] && s["uses"].as<std::string>() == action) return i;
      if (!part.empty() && s["run"] && contains(s["run"].as<std::string>(), part)) return i;
      ++i;
    }
    return -1;
  };
  YAML::Node check = parse(emit_ci(lowered(full_spec())), "ci/.github/workflows/shop.yaml")["jobs"]["check"];
  CHECK(check["permissions"]["id-token"].as<std::string>() == "write");
  CHECK(check["permissions"]["contents"].as<std::string>() == "read");
  const int auth = index(check, catalog().ci().auth, "");
  const int gcloud = index(check, catalog().ci().setup_gcloud, "");
  const int configure = index(check, "", "gcloud auth configure-docker us-docker.pkg.dev --quiet");
  const int pull = index(check, "", "docker run");
  CHECK(index(check, catalog().ci().checkout, "") == 0);  // the auth action writes into the workspace
  CHECK(0 < auth);
  CHECK(auth < gcloud);
  CHECK(gcloud < configure);
  CHECK(configure < pull);
  CHECK(!check["container"]);  // GitHub would pull a job's container before any step signs in

  // A planner signs in for the check job too (it runs on pull requests); an image outside Google's
  // registries needs no Google sign-in.
  const std::string ci =
      "  github:\n"
      "    workloadIdentityProvider: projects/123/locations/global/workloadIdentityPools/gh/providers/repo\n"
      "    traincImage: ghcr.io/my-org/trainc:0.1.0\n"
      "    serviceAccount: deployer@my-proj.iam.gserviceaccount.com\n"
      "    planServiceAccount: planner@my-proj.iam.gserviceaccount.com\n";
  YAML::Node public_check = parse(emit_ci(lowered(full_spec(
                                      "{project: my-proj, region: us-central1, state: {bucket: my-proj-tf}}", ci))),
                                  "ci/.github/workflows/shop.yaml")["jobs"]["check"];
  CHECK(!public_check["permissions"]);
  CHECK(index(public_check, catalog().ci().auth, "") == -1);
  CHECK(index(public_check, "", "configure-docker") == -1);
  std::string planner_ci = ci;
  planner_ci.replace(planner_ci.find("ghcr.io/my-org"), 14, "europe-west4-docker.pkg.dev/tools-proj/tools");
  YAML::Node planner_check =
      parse(emit_ci(lowered(full_spec("{project: my-proj, region: us-central1, state: {bucket: my-proj-tf}}",
                                      planner_ci))),
            "ci/.github/workflows/shop.yaml")["jobs"]["check"];
  const int at = index(planner_check, catalog().ci().auth, "");
  REQUIRE(at > 0);
  CHECK(planner_check["steps"][at]["with"]["service_account"].as<std::string>() ==
        "planner@my-proj.iam.gserviceaccount.com");
  CHECK(index(planner_check, "", "gcloud auth configure-docker europe-west4-docker.pkg.dev --quiet") > at);
}

TEST_CASE("ci: every action is the catalog's pinned one, and no run script holds an expression") {
  System sys = lowered(full_spec());
  YAML::Node wf = parse(emit_ci(sys), "ci/.github/workflows/shop.yaml");
  const CiTools& t = catalog().ci();
  const std::vector<std::string> pinned{t.checkout, t.auth, t.setup_gcloud, t.gke_credentials, t.setup_terraform};
  int n = 0;
  for (const auto& job : wf["jobs"])
    for (const auto& u : uses(job.second)) {
      ++n;
      CHECK_MESSAGE(std::find(pinned.begin(), pinned.end(), u) != pinned.end(), u);
      CHECK(u.find('@') != std::string::npos);
    }
  CHECK(n >= 10);
  for (const auto& job : wf["jobs"])
    for (const auto& s : job.second["steps"])
      if (s["run"]) CHECK_MESSAGE(!contains(s["run"].as<std::string>(), "${{"), s["run"].as<std::string>());
  for (const auto& job : wf["jobs"])
    for (const auto& s : job.second["steps"])
      if (s["uses"] && s["uses"].as<std::string>() == t.setup_terraform)
        CHECK(s["with"]["terraform_version"].as<std::string>() == t.terraform_version);
}

TEST_CASE("ci: without builds there is no images job, and deploy needs only check") {
  const std::string spec = std::string(kSpecHead) +
                           "gcp: {project: my-proj, region: us-central1, state: {bucket: tf, prefix: a/b}}\n"
                           "pipeline:\n  - {name: a, image: 'busybox:1.36', command: ['true']}\n"
                           "ci:\n  github:\n"
                           "    workloadIdentityProvider: projects/1/locations/global/workloadIdentityPools/p/providers/q\n"
                           "    traincImage: us-docker.pkg.dev/my-proj/tools/trainc:0.1.0\n"
                           "    serviceAccount: ci@my-proj.iam.gserviceaccount.com\n    branch: release\n";
  System sys = lowered(spec, {"spec.yaml", "out"});
  auto files = emit_ci(sys);
  CHECK(files.size() == 1);
  YAML::Node wf = parse(files, "ci/.github/workflows/shop.yaml");
  CHECK(!wf["jobs"]["images"]);
  CHECK(strings(wf["jobs"]["deploy"]["needs"]) == std::vector<std::string>{"check"});
  CHECK(!wf["jobs"]["deploy"]["environment"]);
  CHECK(!wf["env"]["ZONE"]);
  CHECK(strings(wf["on"]["push"]["branches"]) == std::vector<std::string>{"release"});
  CHECK(strings(wf["on"]["push"]["paths"]) == std::vector<std::string>{"**"});  // the spec sits at the root
}

TEST_CASE("ci: Cloud Build provision: chained steps, substitutions with defaults, service account and options") {
  System sys = lowered(full_spec());
  auto files = emit_ci(sys);
  YAML::Node cfg = parse(files, "ci/cloudbuild.provision.yaml");
  std::vector<std::string> ids;
  for (const auto& s : cfg["steps"]) ids.push_back(s["id"].as<std::string>());
  CHECK(ids == std::vector<std::string>{"enable-apis", "terraform-init", "terraform-apply", "image-train",
                                        "apply-services", "health"});
  YAML::Node steps = cfg["steps"];
  CHECK(steps[0]["name"].as<std::string>() == catalog().ci().cloud_sdk_image);
  CHECK(strings(steps[0]["args"]).back() == "--project=$PROJECT_ID");
  CHECK(strings(steps[1]["waitFor"]) == std::vector<std::string>{"enable-apis"});
  CHECK(steps[1]["name"].as<std::string>() == catalog().ci().terraform_image);
  CHECK(steps[1]["dir"].as<std::string>() == "deploy/shop/terraform");
  CHECK(strings(steps[1]["args"]) ==
        std::vector<std::string>{"init", "-input=false", "-backend-config=bucket=${_TF_STATE_BUCKET}",
                                 "-backend-config=prefix=${_TF_STATE_PREFIX}"});
  CHECK(strings(steps[2]["args"]) ==
        std::vector<std::string>{"apply", "-input=false", "-auto-approve", "-var=project_id=$PROJECT_ID",
                                 "-var=region=${_REGION}", "-var=zone=${_ZONE}"});
  CHECK(strings(steps[3]["waitFor"]) == std::vector<std::string>{"terraform-apply"});
  CHECK(steps[3]["name"].as<std::string>() == catalog().ci().docker_image);
  CHECK(contains(steps[3]["args"][1].as<std::string>(), "docker manifest inspect \"$$IMAGE\""));
  // The image's path follows the substitutions (the spec's values are their defaults).
  CHECK(sys.builds.at("train").image.starts_with("us-central1-docker.pkg.dev/my-proj/shop/train:"));
  CHECK(strings(steps[3]["env"]) ==
        std::vector<std::string>{"IMAGE=${_REGION}-docker.pkg.dev/$PROJECT_ID/shop/train:" + sys.builds.at("train").tag});
  CHECK(strings(steps[4]["waitFor"]) == std::vector<std::string>{"terraform-apply", "image-train"});
  const std::string apply = steps[4]["args"][1].as<std::string>();
  CHECK(contains(apply, "bash deploy/shop/scripts/apply.sh --services-only"));
  CHECK(contains(apply, "sha256sum --check"));
  CHECK(!contains(apply, "${_"));
  CHECK(strings(steps[4]["env"]) == std::vector<std::string>{"PROJECT_ID=$PROJECT_ID", "REGION=${_REGION}",
                                                              "ZONE=${_ZONE}", "KUBECONFIG=/workspace/.kube/config"});
  CHECK(contains(steps[5]["args"][1].as<std::string>(), "bash deploy/shop/scripts/health.sh"));
  // Every '$' of a script is escaped: Cloud Build substitutes nothing there.
  for (const auto& s : steps)
    if (s["entrypoint"] && s["entrypoint"].as<std::string>() == "bash") {
      const std::string script = s["args"][1].as<std::string>();
      for (size_t i = script.find('$'); i != std::string::npos; i = script.find('$', i + 2))
        CHECK_MESSAGE(script[i + 1] == '$', script);
    }

  CHECK(cfg["substitutions"]["_REGION"].as<std::string>() == "us-central1");
  CHECK(cfg["substitutions"]["_ZONE"].as<std::string>() == "us-central1-a");
  CHECK(cfg["substitutions"]["_TF_STATE_BUCKET"].as<std::string>() == "my-proj-tf");
  CHECK(cfg["substitutions"]["_TF_STATE_PREFIX"].as<std::string>() == "shop");
  CHECK(cfg["timeout"].as<std::string>() == "3600s");
  CHECK(cfg["serviceAccount"].as<std::string>() ==
        "projects/$PROJECT_ID/serviceAccounts/builder@my-proj.iam.gserviceaccount.com");
  CHECK(cfg["options"]["machineType"].as<std::string>() == "E2_HIGHCPU_8");
  CHECK(cfg["options"]["logging"].as<std::string>() == "CLOUD_LOGGING_ONLY");
  const std::string text = files.at("ci/cloudbuild.provision.yaml");
  CHECK(!contains(text, "roles/owner"));
}

TEST_CASE("ci: Cloud Build pushes to $PROJECT_ID, and to ${_REGION} only when the registry is in the region") {
  System sys = lowered(full_spec("{project: my-proj, region: us-central1, state: {bucket: my-proj-tf}, "
                                 "registry: {repository: ml, location: us}}"));
  YAML::Node cfg = parse(emit_ci(sys), "ci/cloudbuild.provision.yaml");
  bool seen = false;
  for (const auto& s : cfg["steps"])
    if (s["id"].as<std::string>() == "image-train") {
      seen = true;
      CHECK(strings(s["env"]) ==
            std::vector<std::string>{"IMAGE=us-docker.pkg.dev/$PROJECT_ID/ml/train:" + sys.builds.at("train").tag});
    }
  CHECK(seen);
}

TEST_CASE("ci: Cloud Build destroy leaves alone an ingress gateway trainc did not install") {
  std::string spec = full_spec();
  const std::string mine = "istio: {}\n";
  REQUIRE(spec.find(mine) != std::string::npos);
  spec.replace(spec.find(mine), mine.size(), "istio: {install: false}\n");
  System sys = lowered(spec);
  YAML::Node cfg = parse(emit_ci(sys), "ci/cloudbuild.destroy.yaml");
  const std::string script = cfg["steps"][0]["args"][1].as<std::string>();
  CHECK(!contains(script, "kubectl delete service"));  // the rollout's teardown has no load balancer of trainc's
  CHECK(contains(script, "kubectl delete -k deploy/shop/k8s"));
}

TEST_CASE("ci: Cloud Build destroy deletes the Kubernetes objects, then terraform destroy") {
  System sys = lowered(full_spec());
  YAML::Node cfg = parse(emit_ci(sys), "ci/cloudbuild.destroy.yaml");
  YAML::Node steps = cfg["steps"];
  REQUIRE(steps.size() == 3);
  CHECK(steps[0]["id"].as<std::string>() == "delete-kubernetes-objects");
  const std::string script = steps[0]["args"][1].as<std::string>();
  const Operator& gw = catalog().istio_gateway();
  const size_t gateway = script.find("kubectl delete service " + gw.release + " -n " + gw.ns);
  const size_t objects = script.find("kubectl delete -k deploy/shop/k8s");
  CHECK(gateway != std::string::npos);
  CHECK(objects != std::string::npos);
  CHECK(gateway < objects);
  CHECK(contains(script, "get-credentials shop --location=\"$$LOCATION\""));
  CHECK(contains(strings(steps[0]["env"]).back(), "LOCATION=${_ZONE}"));
  CHECK(steps[1]["id"].as<std::string>() == "terraform-init");
  CHECK(steps[2]["id"].as<std::string>() == "terraform-destroy");
  CHECK(strings(steps[2]["waitFor"]) == std::vector<std::string>{"delete-kubernetes-objects", "terraform-init"});
  CHECK(strings(steps[2]["args"])[0] == "destroy");
  CHECK(contains(strings(steps[2]["args"])[2], "-auto-approve"));
  CHECK(cfg["substitutions"].size() == 4);
}

TEST_CASE("ci: a regional cluster without a service account or machine type") {
  System sys = lowered(full_spec("{project: my-proj, region: us-central1, state: {bucket: my-proj-tf}}",
                                 "  cloudbuild: {}\n"));
  auto files = emit_ci(sys);
  CHECK(files.size() == 2);
  YAML::Node cfg = parse(files, "ci/cloudbuild.provision.yaml");
  CHECK(!cfg["substitutions"]["_ZONE"]);
  CHECK(!cfg["serviceAccount"]);
  CHECK(!cfg["options"]);
  CHECK(cfg["timeout"].as<std::string>() == "7200s");
  CHECK(!contains(files.at("ci/cloudbuild.provision.yaml"), "_ZONE"));
  YAML::Node destroy = parse(files, "ci/cloudbuild.destroy.yaml");
  CHECK(contains(strings(destroy["steps"][0]["env"]).back(), "LOCATION=${_REGION}"));
}

TEST_CASE("ci: least-privilege roles follow what the system creates") {
  System sys = lowered(full_spec());
  auto roles = ci_roles(sys);
  for (const auto& r : roles) {
    CHECK(r.role != "roles/owner");
    CHECK(r.role != "roles/editor");
    CHECK(!r.why.empty());
  }
  CHECK(has_role(roles, "roles/container.admin"));
  CHECK(has_role(roles, "roles/iam.serviceAccountUser"));
  CHECK(has_role(roles, "roles/storage.admin"));           // creates shop-models
  CHECK(has_role(roles, "roles/iam.serviceAccountAdmin"));  // the service's identity
  CHECK(has_role(roles, "roles/resourcemanager.projectIamAdmin"));  // autoscaled: the metrics adapter
  CHECK(has_role(roles, "roles/artifactregistry.admin"));   // a build: the registry is created
  CHECK(has_role(roles, "roles/serviceusage.serviceUsageAdmin"));  // apis.tf, and Cloud Build enables them
  CHECK(has_role(roles, "roles/logging.logWriter"));
  CHECK(!has_role(roles, "roles/compute.networkAdmin"));
  for (const auto& r : roles) {
    // The nodes' own account is made by the first apply: acting as it is granted on the project.
    if (r.role == "roles/iam.serviceAccountUser") CHECK(r.scope.empty());
    const bool cloudbuild_only = r.role == "roles/logging.logWriter";
    CHECK_MESSAGE(r.cloudbuild_only == cloudbuild_only, r.role);
  }

  // A plain step, no buckets, no identities: the state bucket alone, and no project IAM.
  System small = lowered(std::string(kSpecHead) +
                         "gcp: {project: my-proj, region: us-central1, state: {bucket: tf},"
                         " network: {name: vpc}}\n"
                         "pipeline:\n  - {name: a, image: 'busybox:1.36', command: ['true']}\n"
                         "ci:\n  github:\n"
                         "    workloadIdentityProvider: projects/1/locations/global/workloadIdentityPools/p/providers/q\n"
                         "    traincImage: us-docker.pkg.dev/my-proj/tools/trainc:0.1.0\n"
                         "    serviceAccount: ci@my-proj.iam.gserviceaccount.com\n");
  roles = ci_roles(small);
  CHECK(has_role(roles, "roles/compute.networkAdmin"));
  CHECK(!has_role(roles, "roles/storage.admin"));
  CHECK(has_role(roles, "roles/iam.serviceAccountAdmin"));           // the nodes' own account
  CHECK(has_role(roles, "roles/resourcemanager.projectIamAdmin"));  // and its project role
  CHECK(!has_role(roles, "roles/artifactregistry.admin"));
  CHECK(has_role(roles, "roles/serviceusage.serviceUsageAdmin"));  // Terraform manages apis.tf
  auto state = std::find_if(roles.begin(), roles.end(), [](const CiRole& r) { return r.role == "roles/storage.objectUser"; });
  REQUIRE(state != roles.end());
  CHECK(state->scope == "gs://tf");

  auto apis = ci_apis(sys);
  CHECK(std::find(apis.begin(), apis.end(), "container.googleapis.com") != apis.end());
  CHECK(std::find(apis.begin(), apis.end(), "artifactregistry.googleapis.com") != apis.end());
  CHECK(std::find(apis.begin(), apis.end(), "sts.googleapis.com") != apis.end());
}

TEST_CASE("ci: the runbook lists the CI files, the setup and the roles") {
  System sys = lowered(full_spec());
  OutputSink out;
  const auto plan = k8s::plan(sys);
  for (const auto& e : emitters()) e->emit(sys, plan, out);
  const std::string& md = out.files().at("README.md");
  CHECK(contains(md, "## CI"));
  CHECK(contains(md, "cp deploy/shop/ci/.github/workflows/shop.yaml .github/workflows/shop.yaml"));
  CHECK(contains(md, "gcloud builds submit --config=deploy/shop/ci/cloudbuild.provision.yaml --region=us-central1"));
  CHECK(contains(md, "gcloud builds submit --config=deploy/shop/ci/cloudbuild.destroy.yaml"));
  CHECK(contains(md, "gcloud iam workload-identity-pools create gh"));
  CHECK(contains(md, "providers create-oidc repo"));
  CHECK(contains(md, "roles/iam.workloadIdentityUser"));
  CHECK(contains(md, "principalSet://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/gh/"
                     "attribute.repository/OWNER/REPO"));
  for (const auto& r : ci_roles(sys)) CHECK_MESSAGE(contains(md, r.role), r.role);
  CHECK(contains(md, "--member=serviceAccount:builder@my-proj.iam.gserviceaccount.com "
                     "--role=roles/serviceusage.serviceUsageAdmin"));
  CHECK(contains(md, "--member=serviceAccount:deployer@my-proj.iam.gserviceaccount.com "
                     "--role=roles/serviceusage.serviceUsageAdmin"));
  CHECK(!contains(md, "--member=serviceAccount:deployer@my-proj.iam.gserviceaccount.com "
                      "--role=roles/logging.logWriter"));
  CHECK(contains(md, "gcloud projects add-iam-policy-binding my-proj --member=serviceAccount:deployer@my-proj.iam."
                     "gserviceaccount.com --role=roles/iam.serviceAccountUser --condition=None"));
  // The check job pulls trainc's image as the deployer (no planner here): a read grant on its repository.
  CHECK(contains(md, "gcloud artifacts repositories add-iam-policy-binding tools --project=my-proj --location=us"));
  CHECK(contains(md, "--member=serviceAccount:deployer@my-proj.iam.gserviceaccount.com --role=roles/artifactregistry.reader"));
  CHECK(!contains(md, "roles/owner`"));
  CHECK(!contains(md, "--role=roles/owner"));
  CHECK(!contains(md, "--role=roles/editor"));
}

TEST_CASE("ci: with a planner, pull requests plan read-only and only the deploy branch acts as the deployer") {
  System sys = lowered(full_spec("{project: my-proj, region: us-central1, zone: us-central1-a, state: {bucket: my-proj-tf}}",
                                 "  github:\n"
                                 "    workloadIdentityProvider: projects/123/locations/global/workloadIdentityPools/gh/providers/repo\n"
                                 "    traincImage: us-docker.pkg.dev/my-proj/tools/trainc:0.1.0\n"
                                 "    serviceAccount: deployer@my-proj.iam.gserviceaccount.com\n"
                                 "    planServiceAccount: planner@my-proj.iam.gserviceaccount.com\n"));
  auto files = emit_ci(sys);
  YAML::Node wf = YAML::Load(files.at("ci/.github/workflows/shop.yaml"));
  auto signs_in_as = [&](const char* job) {
    for (const auto& s : wf["jobs"][job]["steps"])
      if (s["uses"] && s["uses"].as<std::string>() == catalog().ci().auth) return s["with"]["service_account"].as<std::string>();
    return std::string();
  };
  CHECK(signs_in_as("plan") == "planner@my-proj.iam.gserviceaccount.com");
  CHECK(signs_in_as("deploy") == "deployer@my-proj.iam.gserviceaccount.com");
  // The planner may only read: diff --live is read-only.
  bool read_only = false;
  for (const auto& s : wf["jobs"]["plan"]["steps"])
    if (s["run"] && contains(s["run"].as<std::string>(), " diff --live "))
      read_only = contains(s["run"].as<std::string>(), " --read-only ");
  CHECK(read_only);
  OutputSink out;
  const auto plan = k8s::plan(sys);
  for (const auto& e : emitters()) e->emit(sys, plan, out);
  const std::string& md = out.files().at("README.md");
  CHECK(contains(md, "add-iam-policy-binding deployer@my-proj.iam.gserviceaccount.com --role=roles/iam.workloadIdentityUser \\\n"
                     "  --member=principalSet://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/gh/"
                     "attribute.ref/refs/heads/main\n"));
  CHECK(contains(md, "add-iam-policy-binding planner@my-proj.iam.gserviceaccount.com --role=roles/iam.workloadIdentityUser"));
  CHECK(!contains(md, "deployer@my-proj.iam.gserviceaccount.com --role=roles/iam.workloadIdentityUser \\\n"
                      "  --member=principalSet://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/gh/"
                      "attribute.repository/"));
}

}  // namespace trainc
