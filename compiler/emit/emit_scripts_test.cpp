#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "emit/emit_scripts.h"
#include "emit/emitter.h"

namespace trainc {
namespace {

/// A zonal cluster with a T4 pool, an autoscaled spot pool and a multi-host TPU v5e slice; a
/// created GCS bucket and an existing read-only one; an identity; two steps, one needing the other.
System gcp_system() {
  System sys;
  sys.name = "mnist";
  sys.ns = "mnist";
  sys.gcp = Gcp{"my-proj", "us-central1", "us-central1-a", "", {}, {}, {}};
  sys.cluster = {"mnist-gke", "REGULAR"};
  sys.identity = Identity{"mnist-ksa", "mnist-gsa", "", "",
                          {{"ckpt", "roles/storage.objectUser"}, {"data", "roles/storage.objectViewer"}}};

  Pool gpu;
  gpu.name = "gpu";
  gpu.machine = "n1-standard-8";
  gpu.accelerator = Accelerator{"nvidia-tesla-t4", 2};
  gpu.nodes = 4;
  Pool spot;
  spot.name = "spot";
  spot.machine = "n2-standard-8";
  spot.nodes = 0;
  spot.autoscaling = std::pair{0, 8};
  spot.provisioning = "spot";
  Pool tpu;
  tpu.name = "tpu";
  tpu.machine = "ct5lp-hightpu-4t";
  tpu.tpu = TpuSlice{"v5e", "tpu-v5-lite-podslice", "2x4", 4, 2};
  tpu.nodes = 2;
  for (const Pool* p : {&gpu, &spot, &tpu}) sys.pools[p->name] = *p;

  Store ckpt;
  ckpt.name = "ckpt";
  ckpt.kind = Store::Kind::gcs;
  ckpt.bucket = "mnist-ckpt";
  ckpt.location = "us-central1";
  ckpt.versioning = true;
  Store data;
  data.name = "data";
  data.kind = Store::Kind::gcs;
  data.bucket = "shared-data";
  data.create = false;
  data.read_only = true;
  sys.stores["ckpt"] = ckpt;
  sys.stores["data"] = data;

  Step prep;
  prep.name = "prep";
  prep.image = "img";
  prep.run = Command{{"python", "prep.py"}};
  prep.shm = "1Gi";
  Step train;
  train.name = "train";
  train.image = "img";
  train.pool = "gpu";
  train.nodes = 2;
  train.gpus = 2;
  train.needs = {"prep"};
  train.run = Torchrun{"/workspace/train.py", {}, 29500};
  train.shm = "2Gi";
  sys.steps = {prep, train};
  return sys;
}

/// The files the scripts emitter writes; it reads the plan, never the k8s files.
std::map<std::string, std::string> emit(const System& sys) {
  OutputSink out;
  new_scripts_emitter()->emit(sys, k8s::plan(sys), out);
  return out.under("scripts/");
}

/// The script's lines with `\`-continued lines joined into one.
std::vector<std::string> logical_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line, pending;
  while (std::getline(in, line)) {
    auto first = line.find_first_not_of(' ');
    pending += pending.empty() || first == std::string::npos ? line : line.substr(first);
    if (!pending.empty() && pending.back() == '\\') {
      pending.pop_back();
      continue;
    }
    out.push_back(pending);
    pending.clear();
  }
  return out;
}

/// The first logical line holding `needle` ("" when none does).
std::string line_with(const std::string& text, std::string_view needle) {
  for (const auto& l : logical_lines(text))
    if (l.find(needle) != std::string::npos) return l;
  return "";
}

/// "kind name" of each `run gcloud ... <verb> name` line: the resources a script makes or deletes.
std::vector<std::string> resources(const std::string& text, std::string_view verb) {
  std::vector<std::string> out;
  for (const auto& l : logical_lines(text)) {
    // up.sh makes a node pool through its create_pool function, with the command the spec gives it
    // (replace_pool's call, of "$pool", is not a pool of the spec).
    if (auto made = l.find("create_pool run "); verb == "create" && made != std::string::npos) {
      if (l.compare(made + 16, 1, "\"") != 0) out.push_back("container node-pools " + l.substr(made + 16));
      continue;
    }
    auto at = l.find("run gcloud ");
    auto v = l.find(fmt::format(" {} ", verb));
    if (at == std::string::npos || v == std::string::npos) continue;
    std::string kind = l.substr(at + 11, v - at - 11);
    std::string name = l.substr(v + verb.size() + 2);
    name = name.substr(0, name.find(' '));
    if (kind == "iam service-accounts") name = "gsa";  // created by id, deleted by email
    out.push_back(kind + " " + name);
  }
  return out;
}

std::size_t pos(const std::string& text, std::string_view needle) {
  auto at = text.find(needle);
  REQUIRE_MESSAGE(at != std::string::npos, "missing: ", needle);
  return at;
}

}  // namespace

TEST_CASE("scripts are emitted only for a spec with gcp") {
  System sys = gcp_system();
  CHECK(emit(sys).size() == 4);
  sys.gcp.reset();
  CHECK(emit(sys).empty());
}

TEST_CASE("every script is strict bash with --dry-run and one run function") {
  for (const auto& [path, text] : emit(gcp_system())) {
    CAPTURE(path);
    CHECK(text.rfind("#!/usr/bin/env bash\n# " + std::string(kGeneratedNotice) + "\n", 0) == 0);
    CHECK(text.find("\nset -euo pipefail\n") != std::string::npos);
    CHECK(text.find("--dry-run) DRY_RUN=1 ;;") != std::string::npos);
    CHECK(text.find("-h|--help) usage; exit 0 ;;") != std::string::npos);
    CHECK(text.find("\nrun() {\n") != std::string::npos);
    CHECK(text.find("/work/") == std::string::npos);
    for (const auto& l : logical_lines(text)) {
      auto first = l.find_first_not_of(' ');
      if (first == std::string::npos) continue;
      bool direct_call = l.compare(first, 7, "gcloud ") == 0 || l.compare(first, 8, "kubectl ") == 0;
      CHECK_MESSAGE(!direct_call, "called without run: ", l);
    }
  }
}

TEST_CASE("up.sh grants bucket roles on each bucket, never on the project") {
  auto up = emit(gcp_system()).at("scripts/up.sh");
  // The one project role: GKE's least-privilege node role, for the nodes' own account.
  CHECK(line_with(up, "projects add-iam-policy-binding").find("--role=roles/container.defaultNodeServiceAccount") !=
        std::string::npos);
  CHECK(up.find("projects add-iam-policy-binding") == up.rfind("projects add-iam-policy-binding"));
  auto ckpt = line_with(up, "buckets add-iam-policy-binding gs://mnist-ckpt");
  CHECK(ckpt.find("--role=roles/storage.objectUser") != std::string::npos);
  CHECK(ckpt.find("--member=\"serviceAccount:${GSA_EMAIL}\"") != std::string::npos);
  auto data = line_with(up, "buckets add-iam-policy-binding gs://shared-data");
  CHECK(data.find("--role=roles/storage.objectViewer") != std::string::npos);
  auto wi = line_with(up, "service-accounts add-iam-policy-binding \"$GSA_EMAIL\"");
  CHECK(wi.find("--role=roles/iam.workloadIdentityUser") != std::string::npos);
  CHECK(wi.find("--member=\"serviceAccount:${PROJECT_ID}.svc.id.goog[mnist/mnist-ksa]\"") != std::string::npos);
  CHECK(line_with(up, "buckets create gs://shared-data").empty());  // create: false
}

TEST_CASE("up.sh makes the cluster and pools from the pool fields") {
  auto up = emit(gcp_system()).at("scripts/up.sh");
  auto cluster = line_with(up, "clusters create");
  CHECK(cluster.find("--workload-pool=\"${PROJECT_ID}.svc.id.goog\"") != std::string::npos);
  // --addons turns off every add-on it does not name: GKE's defaults are named with the driver.
  CHECK(cluster.find("--addons=HorizontalPodAutoscaling,HttpLoadBalancing,GcsFuseCsiDriver") != std::string::npos);
  CHECK(cluster.find("--release-channel=regular") != std::string::npos);
  CHECK(line_with(up, "if missing gcloud container clusters describe \"$CLUSTER\"").size() > 0);

  auto gpu = line_with(up, "node-pools create gpu");
  CHECK(gpu.find("--machine-type=n1-standard-8") != std::string::npos);
  CHECK(gpu.find("--accelerator=type=nvidia-tesla-t4,count=2,gpu-driver-version=latest") != std::string::npos);
  CHECK(gpu.find("--num-nodes=4") != std::string::npos);
  CHECK(gpu.find("--workload-metadata=GKE_METADATA") != std::string::npos);

  auto spot = line_with(up, "node-pools create spot");
  CHECK(spot.find("--enable-autoscaling --min-nodes=0 --max-nodes=8") != std::string::npos);
  CHECK(spot.find("--spot") != std::string::npos);
  CHECK(spot.find("--accelerator") == std::string::npos);

  auto tpu = line_with(up, "node-pools create tpu");
  CHECK(tpu.find("--machine-type=ct5lp-hightpu-4t") != std::string::npos);
  CHECK(tpu.find("--tpu-topology=2x4 --placement-type=COMPACT --num-nodes=2") != std::string::npos);

  auto bucket = line_with(up, "buckets create gs://mnist-ckpt");
  CHECK(bucket.find("--location=\"$REGION\" --uniform-bucket-level-access --public-access-prevention") !=
        std::string::npos);
  CHECK(pos(up, "buckets update gs://mnist-ckpt --versioning") > pos(up, "buckets create gs://mnist-ckpt"));
}

TEST_CASE("a flex-start pool scales from zero without reservations") {
  System sys = gcp_system();
  sys.pools["gpu"].provisioning = "flex-start";
  sys.pools["gpu"].autoscaling = std::pair{0, 3};
  auto gpu = line_with(emit(sys).at("scripts/up.sh"), "node-pools create gpu");
  CHECK(gpu.find("--flex-start --enable-autoscaling --num-nodes=0 --total-min-nodes=0 --total-max-nodes=3") !=
        std::string::npos);
  CHECK(gpu.find("--reservation-affinity=none --no-enable-autorepair") != std::string::npos);
}

TEST_CASE("a pool of TPU slices is one node pool per slice in up.sh and down.sh") {
  System sys = gcp_system();
  sys.pools["tpu"].tpu->slices = 3;
  auto files = emit(sys);
  const auto& up = files.at("scripts/up.sh");
  auto made = resources(up, "create");
  CHECK(std::count(made.begin(), made.end(), "container node-pools tpu") == 0);
  for (const char* name : {"tpu-0", "tpu-1", "tpu-2"}) {
    CAPTURE(name);
    CHECK(std::count(made.begin(), made.end(), std::string("container node-pools ") + name) == 1);
    auto create = line_with(up, fmt::format("node-pools create {} ", name));
    CHECK(create.find("--tpu-topology=2x4 --placement-type=COMPACT --num-nodes=2") != std::string::npos);
    CHECK(line_with(up, fmt::format("if missing gcloud container node-pools describe {} ", name)).size() > 0);
  }
  auto deleted = resources(files.at("scripts/down.sh"), "delete");
  std::reverse(made.begin(), made.end());
  CHECK(deleted == made);
  CHECK(files.at("scripts/down.sh").find("with pools gpu spot tpu-0 tpu-1 tpu-2,") != std::string::npos);
}

TEST_CASE("down.sh deletes in the reverse order of up.sh's creates") {
  auto files = emit(gcp_system());
  auto made = resources(files.at("scripts/up.sh"), "create");
  auto deleted = resources(files.at("scripts/down.sh"), "delete");
  // The nodes' account comes first and goes last.
  CHECK(made == std::vector<std::string>{"iam service-accounts gsa", "container clusters \"$CLUSTER\"",
                                         "container node-pools gpu", "container node-pools spot",
                                         "container node-pools tpu", "storage buckets gs://mnist-ckpt",
                                         "iam service-accounts gsa"});
  std::reverse(made.begin(), made.end());
  CHECK(deleted == made);
}

TEST_CASE("down.sh keeps data and buckets it did not make unless told") {
  auto down = emit(gcp_system()).at("scripts/down.sh");
  CHECK(down.find("gs://shared-data --quiet") == std::string::npos);  // create: false
  CHECK(pos(down, "if has_objects mnist-ckpt; then die") < pos(down, "run gcloud"));
  CHECK(down.find("[ \"$DRY_RUN\" != 1 ] && [ \"$YES\" != 1 ]") != std::string::npos);
  CHECK(down.find("--delete-data) DELETE_DATA=1 ;;") != std::string::npos);
}

TEST_CASE("apply.sh waits for the needed job before applying the next step") {
  auto apply = emit(gcp_system()).at("scripts/apply.sh");
  auto ns = pos(apply, "\"${K8S_DIR}/namespace.yaml\"");
  auto prep = pos(apply, "\"${K8S_DIR}/prep-job.yaml\"");
  auto wait = pos(apply, "\nwait_job mnist-prep\n");
  auto train = pos(apply, "\"${K8S_DIR}/train-configmap.yaml\"");
  CHECK(ns < prep);
  CHECK(prep < wait);
  CHECK(wait < train);
  CHECK(train < pos(apply, "\"${K8S_DIR}/train-jobset.yaml\""));  // a multi-node step is a JobSet
  CHECK(apply.find("wait \"job/$1\"") != std::string::npos);
  CHECK(apply.find("--for=condition=complete") != std::string::npos);
  CHECK(apply.find("K8S_DIR=\"$(dirname \"$0\")/../k8s\"") != std::string::npos);
}

TEST_CASE("apply.sh installs the controllers before the shared objects, and --services-only too") {
  System sys = gcp_system();
  sys.steps.back().pool = "tpu";  // a TPU step is a JobSet
  auto apply = emit(sys).at("scripts/apply.sh");
  auto jobset = pos(apply, "jobset/releases/download/");
  CHECK(jobset < pos(apply, "\"${K8S_DIR}/namespace.yaml\""));
  CHECK(jobset < pos(apply, "if [ \"$SERVICES_ONLY\" = 1 ]; then"));
  CHECK(pos(apply, "if [ \"$SERVICES_ONLY\" = 1 ]; then") < pos(apply, "\"${K8S_DIR}/prep-job.yaml\""));
}

TEST_CASE("status.sh lists pools, buckets and the system's jobs") {
  auto status = emit(gcp_system()).at("scripts/status.sh");
  CHECK(status.find("gcloud container node-pools list") != std::string::npos);
  CHECK(status.find("gcloud storage buckets describe gs://shared-data") != std::string::npos);
  CHECK(line_with(status, "get jobs,pods").find("-l app.kubernetes.io/part-of=mnist") != std::string::npos);
}

TEST_CASE("scripts are deterministic") { CHECK(emit(gcp_system()) == emit(gcp_system())); }

/// gcp_system with its own network and a created registry.
static System environment_system() {
  System sys = gcp_system();
  sys.gcp->network = Network{"mnist-net", "mnist-sub", "10.10.0.0/20", "10.20.0.0/14", "10.30.0.0/20", true, ""};
  sys.gcp->registry = Registry{"mnist-images", "us", true, ""};
  return sys;
}

TEST_CASE("up.sh enables the system's APIs in one call before it makes anything") {
  auto up = emit(gcp_system()).at("scripts/up.sh");
  auto enable = line_with(up, "run gcloud services enable");
  CHECK(enable ==
        "run gcloud services enable cloudresourcemanager.googleapis.com compute.googleapis.com "
        "container.googleapis.com iam.googleapis.com iamcredentials.googleapis.com storage.googleapis.com "
        "--project=\"$PROJECT_ID\"");
  CHECK(pos(up, "run gcloud services enable") < pos(up, "run gcloud container clusters create"));
  CHECK(pos(up, "run gcloud services enable") < pos(up, "if missing gcloud"));
  CHECK(emit(gcp_system()).at("scripts/down.sh").find("services") == std::string::npos);  // APIs stay on

  System sys = environment_system();
  auto with_registry = line_with(emit(sys).at("scripts/up.sh"), "run gcloud services enable");
  CHECK(with_registry.find("artifactregistry.googleapis.com") != std::string::npos);
  CHECK(with_registry.find("cloudbuild.googleapis.com") == std::string::npos);
  sys.ci = Ci{};
  sys.ci->github = GithubCi{};
  CHECK(line_with(emit(sys).at("scripts/up.sh"), "run gcloud services enable").find("cloudbuild") == std::string::npos);
  sys.ci->cloudbuild = CloudBuildCi{};
  CHECK(line_with(emit(sys).at("scripts/up.sh"), "run gcloud services enable").find("cloudbuild.googleapis.com") !=
        std::string::npos);
}

TEST_CASE("up.sh makes the spec's network and a VPC-native cluster on it; down.sh deletes them after the cluster") {
  auto files = emit(environment_system());
  const auto& up = files.at("scripts/up.sh");
  CHECK(up.find("\nREGION=\"${REGION:-us-central1}\"\n") != std::string::npos);
  CHECK(line_with(up, "run gcloud compute networks create mnist-net")
            .ends_with("run gcloud compute networks create mnist-net --project=\"$PROJECT_ID\" --subnet-mode=custom"));
  CHECK(line_with(up, "if missing gcloud compute networks describe mnist-net").size() > 0);
  CHECK(line_with(up, "if missing gcloud compute networks subnets describe mnist-sub").size() > 0);
  auto sub = line_with(up, "run gcloud compute networks subnets create mnist-sub");
  CHECK(sub.find("--region=\"$REGION\"") != std::string::npos);
  CHECK(sub.find("--network=mnist-net --range=10.10.0.0/20") != std::string::npos);
  CHECK(sub.find("--secondary-range=mnist-sub-pods=10.20.0.0/14,mnist-sub-services=10.30.0.0/20") !=
        std::string::npos);
  auto cluster = line_with(up, "clusters create");
  CHECK(cluster.find("--network=mnist-net --subnetwork=mnist-sub --enable-ip-alias "
                     "--cluster-secondary-range-name=mnist-sub-pods "
                     "--services-secondary-range-name=mnist-sub-services") != std::string::npos);
  CHECK(pos(up, "subnets create mnist-sub") < pos(up, "clusters create"));

  const auto& down = files.at("scripts/down.sh");
  CHECK(pos(down, "clusters delete") < pos(down, "subnets delete mnist-sub"));
  CHECK(pos(down, "subnets delete mnist-sub") < pos(down, "networks delete mnist-net"));
  CHECK(down.find("network mnist-net with subnet mnist-sub") != std::string::npos);
  CHECK(down.find("\nREGION=") != std::string::npos);

  // Reverse order, registry included.
  auto made = resources(up, "create");
  CHECK(made == std::vector<std::string>{"compute networks mnist-net", "compute networks subnets mnist-sub",
                                         "iam service-accounts gsa", "container clusters \"$CLUSTER\"", "container node-pools gpu",
                                         "container node-pools spot", "container node-pools tpu",
                                         "storage buckets gs://mnist-ckpt", "artifacts repositories mnist-images",
                                         "iam service-accounts gsa"});
  auto deleted = resources(down, "delete");
  std::reverse(made.begin(), made.end());
  CHECK(deleted == made);
}

TEST_CASE("an existing network is only named by the cluster") {
  System sys = environment_system();
  sys.gcp->network->create = false;
  auto files = emit(sys);
  const auto& up = files.at("scripts/up.sh");
  CHECK(up.find("compute networks create") == std::string::npos);
  CHECK(up.find("compute networks subnets create") == std::string::npos);
  CHECK(line_with(up, "clusters create").find("--network=mnist-net --subnetwork=mnist-sub --enable-ip-alias") !=
        std::string::npos);
  CHECK(files.at("scripts/down.sh").find("compute networks") == std::string::npos);
  CHECK(line_with(emit(gcp_system()).at("scripts/up.sh"), "clusters create").find("--network") == std::string::npos);
}

TEST_CASE("up.sh makes the registry and lets the nodes read that repository alone") {
  auto files = emit(environment_system());
  const auto& up = files.at("scripts/up.sh");
  CHECK(line_with(up, "if missing gcloud artifacts repositories describe mnist-images") ==
        "if missing gcloud artifacts repositories describe mnist-images --location=us --project=\"$PROJECT_ID\"; then");
  auto create = line_with(up, "run gcloud artifacts repositories create mnist-images");
  CHECK(create.find("--location=us --project=\"$PROJECT_ID\" --repository-format=docker") != std::string::npos);
  auto grant = line_with(up, "artifacts repositories add-iam-policy-binding mnist-images");
  CHECK(grant.rfind("retry gcloud", 0) == 0);
  CHECK(grant.find("--location=us") != std::string::npos);
  CHECK(grant.find("--member=\"serviceAccount:mnist-gke-nodes@${PROJECT_ID}.iam.gserviceaccount.com\"") !=
        std::string::npos);
  CHECK(grant.find("--role=roles/artifactregistry.reader") != std::string::npos);
  CHECK(up.find("PROJECT_NUMBER") == std::string::npos);
  CHECK(pos(up, "\nretry() {") < pos(up, "add-iam-policy-binding mnist-images"));

  const auto& down = files.at("scripts/down.sh");
  CHECK(line_with(down, "run gcloud artifacts repositories delete mnist-images")
            .ends_with("run gcloud artifacts repositories delete mnist-images --location=us --project=\"$PROJECT_ID\" --quiet"));
  CHECK(down.find("repository mnist-images with its images") != std::string::npos);
  CHECK(down.find("every image in it: they are lost") != std::string::npos);

  System existing = environment_system();
  existing.gcp->registry->create = false;
  auto kept = emit(existing);
  // An existing repository is only read by the nodes: granted by up.sh, the grant removed by down.sh.
  CHECK(kept.at("scripts/up.sh").find("artifacts repositories create") == std::string::npos);
  CHECK(line_with(kept.at("scripts/up.sh"), "artifacts repositories add-iam-policy-binding mnist-images").size() > 0);
  CHECK(kept.at("scripts/down.sh").find("artifacts repositories delete") == std::string::npos);
  CHECK(line_with(kept.at("scripts/down.sh"), "artifacts repositories remove-iam-policy-binding mnist-images").size() >
        0);
  CHECK(kept.at("scripts/status.sh").find("gcloud artifacts repositories describe mnist-images") != std::string::npos);
}

/// The first logical line holding `needle`, without its indentation.
static std::string stmt_with(const std::string& text, std::string_view needle) {
  std::string l = line_with(text, needle);
  return l.substr(std::min(l.size(), l.find_first_not_of(' ')));
}

/// environment_system() whose step 'train' (on the T4 pool) runs an image trainc builds from a
/// generated Dockerfile, and whose step 'prep' an image of the same registry it does not build.
static System built_system() {
  System sys = environment_system();
  Build b;
  b.name = "train";
  b.of = "step";
  b.context = "src";
  b.base = "python:3.12-slim@sha256:0123";
  b.tag = "c-0123456789abcdef";
  b.image = sys.gcp->image_path("train") + ":" + b.tag;
  sys.builds["train"] = b;
  sys.steps[1].image = b.image;
  sys.steps[0].image = sys.gcp->image_path("prep") + ":1.0";
  return sys;
}

TEST_CASE("build.sh builds each image trainc builds from the spec's folder, unless its tag is in the registry") {
  CHECK(emit(environment_system()).count("scripts/build.sh") == 0);  // nothing to build
  System sys = built_system();
  const std::string image = "us-docker.pkg.dev/my-proj/mnist-images/train:c-0123456789abcdef";
  REQUIRE(sys.builds.at("train").image == image);
  auto files = emit(sys);
  REQUIRE(files.count("scripts/build.sh") == 1);
  const auto& build = files.at("scripts/build.sh");
  CHECK(line_with(build, "build " + image) ==
        "build " + image + " \"${SPEC_DIR}/src\" \"${OUT_DIR}/docker/train.Dockerfile\" linux/amd64");
  CHECK(build.find("mnist-images/prep") == std::string::npos);  // not trainc's to build
  // Skipped when the tag is there (unless --force); docker buildx, else Cloud Build from a staged copy.
  CHECK(stmt_with(build, "exists gcloud artifacts docker images describe") ==
        "if [ \"$FORCE\" = 0 ] && [ \"$DRY_RUN\" = 0 ] && exists gcloud artifacts docker images describe \"$1\"; then");
  CHECK(stmt_with(build, "docker buildx build") == "run docker buildx build --push --platform \"$4\" -f \"$3\" -t \"$1\" \"$2\"");
  CHECK(stmt_with(build, "run gcloud builds submit") ==
        "run gcloud builds submit \"$folder\" --tag=\"$1\" --region=\"$REGION\" --project=\"$PROJECT_ID\"");
  CHECK(pos(build, "stage_context \"$2\" \"$folder\"") < pos(build, "cp \"$3\" \"$folder/Dockerfile\""));
  CHECK(stmt_with(build, "git -C \"$1\" ls-files") ==
        "git -C \"$1\" ls-files -z --cached -- . | (cd \"$1\" && tar --null -T - -cf -) | tar -C \"$2\" -xf - ||");
  CHECK(build.find("trap 'if [ -n \"$STAGE\" ]; then rm -rf \"$STAGE\"; fi' EXIT") != std::string::npos);
  CHECK(stmt_with(build, "run gcloud auth configure-docker") == "run gcloud auth configure-docker us-docker.pkg.dev --quiet");
  // The repository and the project first: no build without them.
  const std::size_t first_build = pos(build, "\nbuild " + image);
  CHECK(pos(build, "die 'repository mnist-images in us does not exist; run up.sh (or Terraform) first'") < first_build);
  CHECK(pos(build, "if [ \"$PROJECT_ID\" != my-proj ]; then") < first_build);
  CHECK(build.find("--force) FORCE=1 ;;") != std::string::npos);
  CHECK(build.find("CLUSTER=") == std::string::npos);  // it names no cluster

  // A user's Dockerfile is in its context; an image for Arm nodes is built for arm64.
  sys.builds.at("train").dockerfile = "docker/Train.Dockerfile";
  sys.builds.at("train").context = ".";
  sys.pools.at("gpu").arm = true;
  CHECK(line_with(emit(sys).at("scripts/build.sh"), "build " + image) ==
        "build " + image + " \"$SPEC_DIR\" \"${SPEC_DIR}/docker/Train.Dockerfile\" linux/arm64");
  sys.gcp->registry->create = false;
  CHECK(emit(sys).at("scripts/build.sh").find("the spec names it as existing (create: false)") != std::string::npos);
}

TEST_CASE("build.sh reads the spec where the compile recorded it, and checks its SHA-256; nothing is searched for") {
  System sys = built_system();
  sys.origin.spec = "examples/mnist/spec.yaml";
  sys.origin.out = "golden";
  sys.origin.spec_sha256 = std::string(64, 'a');
  const auto build = emit(sys).at("scripts/build.sh");
  CHECK(line_with(build, "ROOT=") ==
        "ROOT=$(cd -P \"${OUT_DIR}/../..\" && pwd) || die 'cannot enter ../.., the folder the spec'\\''s path is recorded from'");
  CHECK(line_with(build, "SPEC=") == "SPEC=examples/mnist/spec.yaml");
  CHECK(line_with(build, "SPEC_SHA256=") == "SPEC_SHA256=" + std::string(64, 'a'));
  CHECK(build.find("if [ ! -f \"${ROOT%/}/$SPEC\" ] || [ -L \"${ROOT%/}/$SPEC\" ]; then") != std::string::npos);
  CHECK(build.find("if [ \"$(spec_sha256 \"${ROOT%/}/$SPEC\")\" != \"$SPEC_SHA256\" ]; then") != std::string::npos);
  CHECK(build.find("until ") == std::string::npos);  // no search upwards
  CHECK(pos(build, "SPEC_DIR=") < pos(build, "\nbuild "));
  sys.origin.out = ".";  // the output root is the work tree's root
  CHECK(line_with(emit(sys).at("scripts/build.sh"), "ROOT=").starts_with("ROOT=$(cd -P \"${OUT_DIR}/..\" && pwd)"));
}

TEST_CASE("apply.sh checks every image of the system's registry before it applies anything") {
  auto apply = emit(built_system()).at("scripts/apply.sh");
  const std::string train = "us-docker.pkg.dev/my-proj/mnist-images/train:c-0123456789abcdef";
  CHECK(line_with(apply, "need_image " + train) ==
        "need_image " + train + " 'build and push it with scripts/build.sh (or let CI do it)'");
  CHECK(line_with(apply, "need_image us-docker.pkg.dev/my-proj/mnist-images/prep:1.0") ==
        "need_image us-docker.pkg.dev/my-proj/mnist-images/prep:1.0 'trainc does not build it; push it there'");
  CHECK(pos(apply, "need_image " + train) < pos(apply, "kubectl --context \"$KUBE_CONTEXT\" apply"));
  CHECK(stmt_with(apply, "run gcloud artifacts docker images describe") == "run gcloud artifacts docker images describe \"$1\"");
  CHECK(stmt_with(apply, "elif ! exists gcloud artifacts docker images describe") ==
        "elif ! exists gcloud artifacts docker images describe \"$1\"; then");
  // Images elsewhere are not checked: the T4 steps' "img", and every image of a system without a registry.
  CHECK(emit(environment_system()).at("scripts/apply.sh").find("need_image") == std::string::npos);
  CHECK(emit(gcp_system()).at("scripts/apply.sh").find("need_image") == std::string::npos);
  CHECK(line_with(emit(built_system()).at("scripts/up.sh"), "log 'done;") == "log 'done; next: build.sh, then apply.sh'");
}

TEST_CASE("the runbook's build section names build.sh, and CI as the other way") {
  CHECK(scripts::build_runbook_section(environment_system()).empty());
  System sys = built_system();
  const std::string md = scripts::build_runbook_section(sys);
  CHECK(md.find("## Build the images") != std::string::npos);
  CHECK(md.find("scripts/build.sh --dry-run\nscripts/build.sh\n") != std::string::npos);
  CHECK(md.find("from `src` in the spec's folder (Dockerfile `docker/train.Dockerfile`)") != std::string::npos);
  CHECK(md.find("with `ci:` in the spec") != std::string::npos);
  sys.ci = Ci{};
  CHECK(scripts::build_runbook_section(sys).find("the pipelines (below) build and push the same images") != std::string::npos);
}

TEST_CASE("up.sh stops before it makes anything when the network the cluster joins is missing") {
  auto up = emit(gcp_system()).at("scripts/up.sh");
  CHECK(line_with(up, "networks describe default") ==
        "if ! present gcloud compute networks describe default --project=\"$PROJECT_ID\"; then");
  CHECK(pos(up, "networks describe default") < pos(up, "if missing gcloud"));
  CHECK(line_with(up, "has no VPC network 'default'").find("add gcp.network to the spec") != std::string::npos);
  CHECK(line_with(up, "has no VPC network 'default'").rfind("  die ", 0) == 0);

  System sys = environment_system();
  sys.gcp->network->create = false;
  auto kept = emit(sys).at("scripts/up.sh");
  CHECK(kept.find("networks describe default") == std::string::npos);
  CHECK(pos(kept, "if ! present gcloud compute networks describe mnist-net") < pos(kept, "if missing gcloud"));
  CHECK(pos(kept, "if ! present gcloud compute networks subnets describe mnist-sub") < pos(kept, "if missing gcloud"));
  // A network trainc makes is not checked first.
  CHECK(emit(environment_system()).at("scripts/up.sh").find("if ! present") == std::string::npos);
}

TEST_CASE("the nodes' account: made and granted before the cluster, named by every create, deleted after") {
  auto files = emit(gcp_system());
  const auto& up = files.at("scripts/up.sh");
  const std::string email = "\"mnist-gke-nodes@${PROJECT_ID}.iam.gserviceaccount.com\"";
  CHECK(line_with(up, "run gcloud iam service-accounts create mnist-gke-nodes")
            .find("--display-name='trainc nodes of cluster mnist-gke'") != std::string::npos);
  auto role = line_with(up, "projects add-iam-policy-binding");
  CHECK(role.rfind("retry ", 0) == 0);  // IAM may not know the new account yet
  CHECK(pos(up, "iam service-accounts create mnist-gke-nodes") < pos(up, "projects add-iam-policy-binding"));
  CHECK(pos(up, "projects add-iam-policy-binding") < pos(up, "clusters create"));
  for (const auto& l : logical_lines(up))
    if (l.find("clusters create") != std::string::npos || l.find("node-pools create") != std::string::npos) {
      CAPTURE(l);
      CHECK(l.find("--service-account=" + email + " --scopes=cloud-platform") != std::string::npos);
    }
  const auto& down = files.at("scripts/down.sh");
  CHECK(pos(down, "clusters delete") < pos(down, "projects remove-iam-policy-binding"));
  CHECK(pos(down, "projects remove-iam-policy-binding") < pos(down, "service-accounts delete " + email));
  CHECK(down.find("the nodes' service account mnist-gke-nodes") != std::string::npos);
}

TEST_CASE("RDMA pools get the second gVNIC NIC's network first, and lose it after the cluster") {
  System sys = gcp_system();
  sys.pools["gpu"].rdma = true;
  auto files = emit(sys);
  const auto& up = files.at("scripts/up.sh");
  CHECK(pos(up, "networks create mnist-gke-gvnic") < pos(up, "networks create mnist-gke-rdma"));
  CHECK(line_with(up, "networks create mnist-gke-gvnic").find("--subnet-mode=custom --mtu=8896") != std::string::npos);
  CHECK(line_with(up, "subnets create mnist-gke-gvnic-sub").find("--network=mnist-gke-gvnic --range=192.168.64.0/18") !=
        std::string::npos);
  CHECK(line_with(up, "firewall-rules create mnist-gke-gvnic-internal")
            .find("--network=mnist-gke-gvnic --allow=tcp:0-65535,udp:0-65535,icmp --source-ranges=192.168.64.0/18") !=
        std::string::npos);
  auto pool = line_with(up, "node-pools create gpu");
  CHECK(pool.find("--additional-node-network=network=mnist-gke-gvnic,subnetwork=mnist-gke-gvnic-sub "
                  "--additional-node-network=network=mnist-gke-rdma,subnetwork=mnist-gke-rdma-sub-0") !=
        std::string::npos);
  const auto& down = files.at("scripts/down.sh");
  CHECK(pos(down, "clusters delete") < pos(down, "firewall-rules delete mnist-gke-gvnic-internal"));
  CHECK(pos(down, "firewall-rules delete mnist-gke-gvnic-internal") < pos(down, "networks delete mnist-gke-gvnic "));
}

}  // namespace trainc
