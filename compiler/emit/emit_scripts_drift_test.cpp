#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "emit/emit_scripts.h"
#include "emit/emitter.h"

namespace trainc {
namespace {

/// A zonal cluster with a fixed T4 pool (labelled and tainted), an autoscaled Spot pool, a
/// flex-start pool on a reservation-less GPU, a reservation pool and a multi-host TPU slice.
System drift_system() {
  System sys;
  sys.name = "drift";
  sys.ns = "drift";
  sys.gcp = Gcp{"my-proj", "us-central1", "us-central1-a", "", {}, {}, {}};
  sys.cluster = {"drift-gke", "REGULAR"};
  Pool gpu;
  gpu.name = "gpu";
  gpu.machine = "n1-standard-8";
  gpu.accelerator = Accelerator{"nvidia-tesla-t4", 2};
  gpu.nodes = 4;
  gpu.disk_gb = 200;
  gpu.labels = {{"tier", "it's"}, {"team", "ml"}};
  gpu.taints = {{"zeta", "1", "NoExecute"}, {"alpha", "", "PreferNoSchedule"}};
  Pool spot;
  spot.name = "spot";
  spot.machine = "n2-standard-8";
  spot.autoscaling = std::pair{1, 8};
  spot.provisioning = "spot";
  Pool flex;
  flex.name = "flex";
  flex.machine = "a3-highgpu-8g";
  flex.accelerator = Accelerator{"nvidia-h100-80gb", 8};
  flex.autoscaling = std::pair{0, 3};
  flex.provisioning = "flex-start";
  Pool held;
  held.name = "held";
  held.machine = "a3-megagpu-8g";
  held.nodes = 2;
  held.provisioning = "reservation";
  held.reservation = "my-reservation";
  Pool tpu;
  tpu.name = "tpu";
  tpu.machine = "ct5lp-hightpu-4t";
  tpu.tpu = TpuSlice{"v5e", "tpu-v5-lite-podslice", "2x4", 4, 2};
  tpu.nodes = 2;
  for (const Pool* p : {&gpu, &spot, &flex, &held, &tpu}) sys.pools[p->name] = *p;
  Step train;
  train.name = "train";
  train.image = "img";
  train.pool = "gpu";
  train.run = Command{{"python", "train.py"}};
  Step eval;
  eval.name = "eval";
  eval.image = "img";
  eval.pool = "gpu";
  eval.needs = {"train"};
  eval.run = Command{{"python", "eval.py"}};
  sys.steps = {train, eval};
  return sys;
}

std::string up_sh(const System& sys) {
  OutputSink out;
  new_scripts_emitter()->emit(sys, k8s::plan(sys), out);
  return out.under("scripts/").at("scripts/up.sh");
}

/// The text of the `else` branch up.sh runs for existing node pool `name`: from its create_pool
/// call to the `fi` that closes it.
std::string branch_of(const std::string& up, const std::string& name) {
  const std::string start = "  create_pool run " + name + "\nelse\n";
  auto at = up.find(start);
  REQUIRE_MESSAGE(at != std::string::npos, "no branch for ", name);
  return up.substr(at, up.find("\nfi\n", at) - at);
}

}  // namespace

TEST_CASE("up.sh compares an existing pool with the spec in the fields gcloud's describe names") {
  const std::string up = up_sh(drift_system());
  const std::string gpu = branch_of(up, "gpu");
  // Fixed when a pool is made: a difference replaces it.
  for (const char* want :
       {"if same_pool gpu \\\n", "    config.machineType=n1-standard-8 \\\n",
        "    'config.accelerators[0].acceleratorType=nvidia-tesla-t4' \\\n",
        "    'config.accelerators[0].acceleratorCount=2' \\\n", "    config.diskSizeGb=200 \\\n",
        "    config.spot=False \\\n", "    config.flexStart=False \\\n",
        "    'config.reservationAffinity.consumeReservationType=!SPECIFIC_RESERVATION' \\\n",
        "    placementPolicy.type= \\\n", "    placementPolicy.tpuTopology=; then\n"}) {
    CAPTURE(std::string(want));
    CHECK(gpu.find(want) != std::string::npos);
  }
  // Updated in place: the size of a fixed pool, its labels (sorted by key, as gcloud lists them,
  // quoted for the shell) and its taints (in the API's effect names, sorted, for the comparison).
  CHECK(gpu.find("    pool_size gpu fixed 4 4\n") != std::string::npos);
  CHECK(gpu.find("    pool_labels gpu 'team=ml;tier=it'\\''s' 'team=ml,tier=it'\\''s'\n") != std::string::npos);
  CHECK(gpu.find("    pool_taints gpu 'alpha=:PREFER_NO_SCHEDULE;zeta=1:NO_EXECUTE' "
                 "zeta=1:NoExecute,alpha=:PreferNoSchedule\n") != std::string::npos);
  // A replacement names what runs there.
  CHECK(gpu.find("    replace_pool gpu 'every pod running on them (the spec places steps train, eval there)'\n") !=
        std::string::npos);
}

TEST_CASE("up.sh sizes each kind of pool with the fields and flags of its kind") {
  const std::string up = up_sh(drift_system());
  const std::string spot = branch_of(up, "spot");
  CHECK(spot.find("    config.spot=True \\\n") != std::string::npos);
  CHECK(spot.find("    pool_size spot autoscaled 1 8\n") != std::string::npos);
  CHECK(spot.find("config.diskSizeGb") == std::string::npos);  // GKE's default disk: not compared
  const std::string flex = branch_of(up, "flex");
  CHECK(flex.find("    config.flexStart=True \\\n") != std::string::npos);
  CHECK(flex.find("    pool_size flex total 0 3\n") != std::string::npos);
  const std::string held = branch_of(up, "held");
  CHECK(held.find("    config.reservationAffinity.consumeReservationType=SPECIFIC_RESERVATION \\\n") != std::string::npos);
  CHECK(held.find("    config.reservationAffinity.values=my-reservation \\\n") != std::string::npos);
  CHECK(held.find("    pool_size held fixed 2 2\n") != std::string::npos);
  const std::string tpu = branch_of(up, "tpu");
  CHECK(tpu.find("    placementPolicy.type=COMPACT \\\n") != std::string::npos);
  CHECK(tpu.find("    placementPolicy.tpuTopology=2x4; then\n") != std::string::npos);
  CHECK(tpu.find("    pool_size tpu fixed 2 2\n") != std::string::npos);
  CHECK(tpu.find("    replace_pool tpu 'every pod running on them'\n") != std::string::npos);
  // The flags pool_size updates with, and the instance groups it reads a fixed pool's size from.
  for (const char* want : {"          --total-min-nodes=\"$min\" \\\n          --total-max-nodes=\"$max\"\n",
                           "          --min-nodes=\"$min\" \\\n          --max-nodes=\"$max\"\n",
                           "        --no-enable-autoscaling\n", "run gcloud container clusters resize \"$CLUSTER\" \\\n",
                           "n=$(gcloud compute instance-groups managed describe \"${url##*/}\" \\\n"}) {
    CAPTURE(std::string(want));
    CHECK(up.find(want) != std::string::npos);
  }
}

TEST_CASE("up.sh takes --replace POOL, for the spec's node pools only, and replaces with the create it runs") {
  const std::string up = up_sh(drift_system());
  CHECK(up.find("'usage: up.sh [--replace POOL] [--dry-run] [-h|--help]'") != std::string::npos);
  CHECK(up.find("    --replace)\n      if [ \"$#\" -lt 2 ]; then usage >&2; log 'error: --replace needs a POOL'; exit 2; fi\n"
                "      REPLACE+=\" $2\"\n") != std::string::npos);
  CHECK(up.find("  case $pool in flex | gpu | held | spot | tpu) ;; *) die \"--replace ${pool}: the spec has no node pool") !=
        std::string::npos);
  // The one create command of each pool, run by the first up.sh and by a replacement, shown by a refusal.
  CHECK(up.find("      \"$1\" gcloud container node-pools create gpu \\\n") != std::string::npos);
  CHECK(up.find("  create_pool show \"$pool\"\n") != std::string::npos);
  CHECK(up.find("      create_pool run \"$pool\"\n") != std::string::npos);
  // Pools the spec does not have are named after the spec's, never deleted.
  CHECK(up.find("  for pool in $pools; do\n    case $pool in flex | gpu | held | spot | tpu) continue ;; esac\n") >
        up.find("if same_pool tpu"));
  CHECK(up.find("    show gcloud container node-pools delete \"$pool\" \\\n") != std::string::npos);
  // The comparison runs only where the pool exists: a dry run takes it as missing.
  CHECK(up.find("if missing gcloud container node-pools describe gpu \\\n") < up.find("if same_pool gpu"));
}

TEST_CASE("up.sh checks the cluster before it makes anything, and each bucket it made") {
  System sys = drift_system();
  Network net;
  net.name = "ml-net";
  net.subnet = "ml-sub";
  sys.gcp->network = net;
  Store in_region, elsewhere;
  in_region.name = "ckpt";
  in_region.kind = elsewhere.kind = Store::Kind::gcs;
  in_region.bucket = "ckpt-bucket";
  elsewhere.name = "data";
  elsewhere.bucket = "data-bucket";
  elsewhere.location = "EU";
  sys.stores = {{"ckpt", in_region}, {"data", elsewhere}};
  const std::string up = up_sh(sys);
  // The network is fixed, the release channel (as GKE names it, then as gcloud takes it) updated.
  const auto check = up.find("  check_cluster ml-net ml-sub REGULAR regular False\n");
  REQUIRE(check != std::string::npos);
  CHECK(up.rfind("if ! missing gcloud container clusters describe \"$CLUSTER\"", check) != std::string::npos);
  CHECK(check < up.find("run gcloud compute networks create ml-net"));
  CHECK(up.find("--format='value[separator=\"|\"](network,subnetwork,releaseChannel.channel,"
                "monitoringConfig.managedPrometheusConfig.enabled)'") != std::string::npos);
  CHECK(up.find("  check_bucket gs://ckpt-bucket \"$REGION\"\n") != std::string::npos);
  CHECK(up.find("  check_bucket gs://data-bucket EU\n") != std::string::npos);
  CHECK(up.find("      --format='value(location)') || die \"cannot read bucket $1\"\n") != std::string::npos);
}

TEST_CASE("a system without pools gets no pool comparison and no --replace") {
  System sys = drift_system();
  sys.pools.clear();
  sys.steps.clear();
  const std::string up = up_sh(sys);
  CHECK(up.find("--replace") == std::string::npos);
  CHECK(up.find("same_pool") == std::string::npos);
}

}  // namespace trainc
