#include <doctest/doctest.h>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "emit/emitter.h"
#include "frontend/yaml_loader.h"
#include "model/lower.h"
#include "model/test_lowered.h"

namespace trainc {

static Pool gpu_pool(std::string name, std::string machine, std::string accelerator, int count, int nodes) {
  Pool p;
  p.name = std::move(name);
  p.machine = std::move(machine);
  p.accelerator = Accelerator{std::move(accelerator), count};
  p.nodes = nodes;
  return p;
}

static Store gcs_store(std::string name, std::string bucket) {
  Store s;
  s.name = std::move(name);
  s.kind = Store::Kind::gcs;
  s.bucket = std::move(bucket);
  return s;
}

/// A zonal cluster with every kind of pool, three GCS stores (one existing), an S3 store and an identity.
static System zonal_system() {
  System sys;
  sys.name = "mnist";
  sys.ns = "mnist-ns";
  sys.gcp = Gcp{"my-proj", "us-central1", "us-central1-a", "", {}, {}, {}};
  sys.cluster = Cluster{"mnist-cluster", "REGULAR"};

  Pool t4 = gpu_pool("t4", "n1-standard-8", "nvidia-tesla-t4", 2, 3);
  t4.disk_gb = 200;
  t4.labels = {{"team", "ml"}, {"example.com/tier", "gpu"}};
  t4.taints = {Taint{"dedicated", "train", "NoSchedule"}};
  sys.pools["t4"] = t4;

  Pool spot;
  spot.name = "spot-cpu";
  spot.machine = "e2-standard-8";
  spot.nodes = 1;
  spot.autoscaling = std::make_pair(1, 5);
  spot.provisioning = "spot";
  sys.pools["spot-cpu"] = spot;

  Pool reserved = gpu_pool("reserved", "a3-highgpu-8g", "nvidia-h100-80gb", 8, 2);
  reserved.provisioning = "reservation";
  reserved.reservation = "my-h100-res";
  sys.pools["reserved"] = reserved;

  Pool tpu;
  tpu.name = "tpu-v5e";
  tpu.machine = "ct5lp-hightpu-4t";
  tpu.tpu = TpuSlice{"v5e", "tpu-v5-lite-podslice", "2x4", 4, 2};
  tpu.nodes = 2;
  sys.pools["tpu-v5e"] = tpu;

  Pool flex = gpu_pool("flex", "g2-standard-8", "nvidia-l4", 1, 1);
  flex.provisioning = "flex-start";
  flex.autoscaling = std::make_pair(0, 4);
  sys.pools["flex"] = flex;

  Store data = gcs_store("data", "mnist-data-bucket");
  data.read_only = true;
  sys.stores["data"] = data;
  Store ckpt = gcs_store("ckpt", "mnist-ckpt-bucket");
  ckpt.versioning = true;
  ckpt.location = "US";
  sys.stores["ckpt"] = ckpt;
  Store ext = gcs_store("shared-datasets", "someone-elses-bucket");
  ext.create = false;
  ext.read_only = true;
  sys.stores["shared-datasets"] = ext;
  Store s3;
  s3.name = "s3in";
  s3.bucket = "an-s3-bucket";
  sys.stores["s3in"] = s3;

  // As lowering grants them: a role on each GCS bucket, read-only where the store is.
  sys.identity = Identity{"trainer", "mnist-trainer", "", "", {}};
  for (const auto& [name, store] : sys.stores)
    if (store.kind == Store::Kind::gcs)
      sys.identity->grants.push_back(
          {name, store.read_only ? "roles/storage.objectViewer" : "roles/storage.objectUser"});
  return sys;
}

/// A regional cluster without identity: one RDMA pool and one bucket.
static System regional_system() {
  System sys;
  sys.name = "big";
  sys.ns = "big";
  sys.gcp = Gcp{"my-proj", "europe-west4", "", "", {}, {}, {}};
  sys.cluster = Cluster{"big", ""};
  Pool a4 = gpu_pool("a4", "a4-highgpu-8g", "nvidia-b200", 8, 2);
  a4.rdma = true;
  sys.pools["a4"] = a4;
  sys.stores["out"] = gcs_store("out", "big-outputs");
  return sys;
}

/// A system with its own identity, two GCS stores and an autoscaled Triton service, lowered from a
/// spec so the service's grants are the ones lowering gives it.
static System served_system() {
  const std::string spec =
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: shop\n"
      "gcp: {project: my-proj, region: us-central1, zone: us-central1-a}\n"
      "cluster:\n  pools:\n    t4: {machine: n1-standard-4, accelerator: {type: nvidia-tesla-t4, count: 1}, nodes: 2}\n"
      "storage:\n  models: {gcs: {bucket: shop-models}}\n  ckpt: {gcs: {bucket: shop-ckpt}}\n"
      "identity: {serviceAccount: trainer}\n"
      "services:\n  triton:\n    pool: t4\n"
      "    triton: {repository: 'models:/repo', models: [densenet_onnx]}\n"
      "    autoscaling: {min: 1, max: 3}\n";
  Diagnostics diags;
  auto doc = load_yaml(std::make_shared<SourceFile>("s.yaml", spec), diags);
  REQUIRE(doc);
  auto sys = lower(*doc, diags);
  REQUIRE_MESSAGE(sys, diags.render_text());
  return *sys;
}

/// A system lowered from `spec` (the helpers below set only what the test is about).
using testing::lowered;

/// A system with remote state, its own network, a registry and Cloud Build; `gcp_extra` and
/// `tail` add to or replace parts of the spec.
static System environment_system(const std::string& gcp_extra = "", const std::string& tail = "") {
  return lowered(
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: env\n"
      "gcp:\n  project: my-proj\n  region: us-central1\n  zone: us-central1-a\n"
      "  state: {bucket: my-proj-tf-state, prefix: systems/env}\n" +
      gcp_extra +
      "cluster:\n  pools:\n    cpu: {machine: e2-standard-8, nodes: 1}\n"
      "storage:\n  data: {gcs: {bucket: env-data}}\n" +
      tail);
}

static const std::string kAll =
    "  network: {name: env-net, cidr: 10.10.0.0/20, pods: 10.20.0.0/14, services: 10.30.0.0/20}\n"
    "  registry: {repository: env-images, location: us}\n";
static const std::string kCloudBuild = "ci:\n  cloudbuild: {}\n";

static std::map<std::string, std::string> emit_terraform(const System& sys) {
  OutputSink out;
  new_terraform_emitter()->emit(sys, k8s::plan(sys), out);
  return out.files();
}

/// The text of the top-level block that starts with `header` (up to its closing brace).
static std::string block(const std::string& file, const std::string& header) {
  size_t start = file.find(header + " {\n");
  REQUIRE_MESSAGE(start != std::string::npos, header);
  size_t end = file.find("\n}\n", start);
  return file.substr(start, end + 3 - start);
}

static std::string regex_escape(const std::string& s) {
  return std::regex_replace(s, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
}

/// Whether `text` has the line `name = value` (with any alignment padding).
static bool has(const std::string& text, const std::string& name, const std::string& value) {
  return std::regex_search(text, std::regex("\\n *" + regex_escape(name) + " += " + regex_escape(value) + "\\n"));
}

/// Whether `text` sets `name` at all.
static bool sets(const std::string& text, const std::string& name) {
  return std::regex_search(text, std::regex("\\n *" + regex_escape(name) + " += "));
}

static size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("terraform: no gcp section, no terraform") {
  System sys = zonal_system();
  sys.gcp.reset();
  CHECK(emit_terraform(sys).empty());
}

TEST_CASE("terraform: every file is generated, headed and deterministic") {
  auto files = emit_terraform(zonal_system());
  for (const char* f : {"versions.tf", "variables.tf", "providers.tf", "cluster.tf", "node_pools.tf", "storage.tf",
                        "iam.tf", "outputs.tf"})
    CHECK_MESSAGE(files.count(std::string("terraform/") + f) == 1, f);
  for (const auto& [path, text] : files) {
    CHECK_MESSAGE(text.rfind("# " + std::string(kGeneratedNotice) + "\n", 0) == 0, path);
    // The one project role: GKE's least-privilege node role (iam.tf), which the cluster waits for.
    CHECK_MESSAGE(count(text, "resource \"google_project_iam_member\"") ==
                      count(text, "resource \"google_project_iam_member\" \"nodes\""),
                  path);
    CHECK_MESSAGE(text.find("/work/") == std::string::npos, path);
  }
  CHECK(files == emit_terraform(zonal_system()));
  CHECK(has(files["terraform/versions.tf"], "version", "\"6.50.0\""));
  CHECK(has(files["terraform/variables.tf"], "default", "\"us-central1-a\""));
}

TEST_CASE("terraform: the cluster is zonal, keeps no default pool and enables Workload Identity and GCS FUSE") {
  auto files = emit_terraform(zonal_system());
  std::string c = block(files["terraform/cluster.tf"], "resource \"google_container_cluster\" \"mnist_cluster\"");
  CHECK(has(c, "name", "\"mnist-cluster\""));
  CHECK(has(c, "location", "var.zone"));
  CHECK(has(c, "remove_default_node_pool", "true"));
  CHECK(has(c, "deletion_protection", "false"));
  CHECK(has(c, "channel", "\"REGULAR\""));
  CHECK(has(c, "workload_pool", "\"${var.project_id}.svc.id.goog\""));
  CHECK(c.find("gcs_fuse_csi_driver_config {\n      enabled = true") != std::string::npos);
}

TEST_CASE("terraform: node pools take machine and accelerators from the pool") {
  System sys = zonal_system();
  std::string pools = emit_terraform(sys)["terraform/node_pools.tf"];
  std::string t4 = block(pools, "resource \"google_container_node_pool\" \"t4\"");
  CHECK(has(t4, "cluster", "google_container_cluster.mnist_cluster.id"));
  CHECK(has(t4, "node_count", "3"));
  CHECK(has(t4, "machine_type", "\"" + sys.pools["t4"].machine + "\""));
  CHECK(has(t4, "count", std::to_string(sys.pools["t4"].accelerator->count)));
  CHECK(has(t4, "type", "\"nvidia-tesla-t4\""));
  CHECK(has(t4, "gpu_driver_version", "\"LATEST\""));
  CHECK(has(t4, "disk_size_gb", "200"));
  CHECK(has(t4, "\"example.com/tier\"", "\"gpu\""));
  CHECK(has(t4, "effect", "\"NO_SCHEDULE\""));
  CHECK(has(t4, "mode", "\"GKE_METADATA\""));

  std::string spot = block(pools, "resource \"google_container_node_pool\" \"spot_cpu\"");
  CHECK(has(spot, "spot", "true"));
  CHECK(has(spot, "initial_node_count", "1"));
  CHECK(has(spot, "min_node_count", "1"));
  CHECK(has(spot, "max_node_count", "5"));
  CHECK_FALSE(sets(spot, "node_count"));
  CHECK(spot.find("guest_accelerator") == std::string::npos);

  std::string res = block(pools, "resource \"google_container_node_pool\" \"reserved\"");
  CHECK(has(res, "consume_reservation_type", "\"SPECIFIC_RESERVATION\""));
  CHECK(has(res, "key", "\"compute.googleapis.com/reservation-name\""));
  CHECK(has(res, "values", "[\"my-h100-res\"]"));
  CHECK(has(res, "count", "8"));

  std::string flex = block(pools, "resource \"google_container_node_pool\" \"flex\"");
  CHECK(has(flex, "flex_start", "true"));
  CHECK(has(flex, "initial_node_count", "0"));
  CHECK(has(flex, "max_node_count", "4"));
  CHECK(has(flex, "location_policy", "\"ANY\""));
  CHECK(has(flex, "auto_repair", "false"));
  CHECK(has(flex, "consume_reservation_type", "\"NO_RESERVATION\""));
}

TEST_CASE("terraform: a multi-host TPU slice is one compact pool of exactly its hosts") {
  std::string pools = emit_terraform(zonal_system())["terraform/node_pools.tf"];
  std::string tpu = block(pools, "resource \"google_container_node_pool\" \"tpu_v5e\"");
  CHECK(has(tpu, "name", "\"tpu-v5e\""));
  CHECK(has(tpu, "node_count", "2"));
  CHECK(has(tpu, "machine_type", "\"ct5lp-hightpu-4t\""));
  CHECK(has(tpu, "type", "\"COMPACT\""));
  CHECK(has(tpu, "tpu_topology", "\"2x4\""));
  CHECK(tpu.find("guest_accelerator") == std::string::npos);
}

TEST_CASE("terraform: a pool of TPU slices is one compact node pool per slice") {
  System sys = zonal_system();
  sys.pools["tpu-v5e"].tpu->slices = 3;
  std::string pools = emit_terraform(sys)["terraform/node_pools.tf"];
  CHECK(count(pools, "resource \"google_container_node_pool\" \"tpu_v5e") == 3);
  CHECK(pools.find("resource \"google_container_node_pool\" \"tpu_v5e\"") == std::string::npos);
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    std::string slice = block(pools, fmt::format("resource \"google_container_node_pool\" \"tpu_v5e_{}\"", i));
    CHECK(has(slice, "name", fmt::format("\"tpu-v5e-{}\"", i)));
    CHECK(has(slice, "node_count", "2"));
    CHECK(has(slice, "machine_type", "\"ct5lp-hightpu-4t\""));
    CHECK(has(slice, "type", "\"COMPACT\""));
    CHECK(has(slice, "tpu_topology", "\"2x4\""));
  }
  const std::string t4 = "resource \"google_container_node_pool\" \"t4\"";
  CHECK(block(pools, t4) == block(emit_terraform(zonal_system())["terraform/node_pools.tf"], t4));
}

TEST_CASE("terraform: buckets are private, and roles are granted per bucket") {
  auto files = emit_terraform(zonal_system());
  std::string storage = files["terraform/storage.tf"];
  std::string data = block(storage, "resource \"google_storage_bucket\" \"data\"");
  CHECK(has(data, "location", "\"US-CENTRAL1\""));
  CHECK(has(data, "public_access_prevention", "\"enforced\""));
  CHECK(has(data, "uniform_bucket_level_access", "true"));
  CHECK(has(data, "force_destroy", "false"));
  CHECK(has(data, "enabled", "false"));
  CHECK(has(block(storage, "resource \"google_storage_bucket\" \"ckpt\""), "enabled", "true"));
  CHECK(storage.find("someone-elses-bucket") == std::string::npos);
  CHECK(storage.find("an-s3-bucket") == std::string::npos);

  std::string iam = files["terraform/iam.tf"];
  CHECK(has(block(iam, "resource \"google_service_account\" \"mnist_trainer\""), "account_id", "\"mnist-trainer\""));
  std::string ro = block(iam, "resource \"google_storage_bucket_iam_member\" \"data\"");
  CHECK(has(ro, "bucket", "google_storage_bucket.data.name"));
  CHECK(has(ro, "role", "\"roles/storage.objectViewer\""));
  CHECK(has(ro, "member", "\"serviceAccount:${google_service_account.mnist_trainer.email}\""));
  CHECK(has(block(iam, "resource \"google_storage_bucket_iam_member\" \"ckpt\""), "role", "\"roles/storage.objectUser\""));
  CHECK(has(block(iam, "resource \"google_storage_bucket_iam_member\" \"shared_datasets\""), "bucket",
            "\"someone-elses-bucket\""));
  CHECK(iam.find("s3in") == std::string::npos);

  std::string wi = block(iam, "resource \"google_service_account_iam_member\" \"workload_identity\"");
  CHECK(has(wi, "service_account_id", "google_service_account.mnist_trainer.name"));
  CHECK(has(wi, "role", "\"roles/iam.workloadIdentityUser\""));
  CHECK(has(wi, "member", "\"serviceAccount:${var.project_id}.svc.id.goog[mnist-ns/trainer]\""));
  CHECK(has(wi, "depends_on", "[google_container_cluster.mnist_cluster]"));

  std::string outputs = files["terraform/outputs.tf"];
  CHECK(has(outputs, "value", "google_service_account.mnist_trainer.email"));
  CHECK(has(outputs, "\"shared-datasets\"", "\"someone-elses-bucket\""));
}

TEST_CASE("terraform: a regional cluster counts autoscaling in totals") {
  System sys = regional_system();
  sys.pools["a4"].autoscaling = std::make_pair(2, 4);
  auto files = emit_terraform(sys);
  CHECK(count(files["terraform/iam.tf"], "resource \"google_service_account\"") == 1);  // the nodes' alone
  CHECK(files["terraform/variables.tf"].find("variable \"zone\"") == std::string::npos);
  CHECK(has(block(files["terraform/cluster.tf"], "resource \"google_container_cluster\" \"big\""), "location",
            "var.region"));
  std::string pools = files["terraform/node_pools.tf"];
  CHECK(has(pools, "total_min_node_count", "2"));
  CHECK(has(pools, "total_max_node_count", "4"));
  CHECK(files["terraform/outputs.tf"].find("gsa_email") == std::string::npos);
}

TEST_CASE("terraform: an RDMA pool gets the RDMA VPC, one subnet per NIC and multi-networking") {
  System sys = regional_system();
  sys.gcp->zone = sys.gcp->region + "-b";  // RDMA networks are zonal
  REQUIRE(sys.pools["a4"].rdma);
  REQUIRE(sys.rdma_nics() == 8);
  auto files = emit_terraform(sys);
  const std::string net = files["terraform/network.tf"];
  CHECK(net.find("networkProfiles/${var.zone}-vpc-roce\"") != std::string::npos);
  CHECK(has(block(net, "resource \"google_compute_subnetwork\" \"rdma_7\""), "ip_cidr_range", "\"192.168.184.0/21\""));
  CHECK(net.find("rdma_8") == std::string::npos);
  const std::string cluster = files["terraform/cluster.tf"];
  CHECK(cluster.find("enable_multi_networking = true") != std::string::npos);
  CHECK(cluster.find("datapath_provider       = \"ADVANCED_DATAPATH\"") != std::string::npos);
  const std::string pools = files["terraform/node_pools.tf"];
  size_t configs = 0;
  for (size_t at = pools.find("additional_node_network_configs"); at != std::string::npos;
       at = pools.find("additional_node_network_configs", at + 1))
    ++configs;
  CHECK(configs == 9);  // the second gVNIC NIC, then one per RDMA NIC
  CHECK(pools.find("google_compute_network.gvnic.name") < pools.find("google_compute_network.rdma.name"));
  CHECK(has(block(net, "resource \"google_compute_subnetwork\" \"gvnic\""), "ip_cidr_range", "\"192.168.64.0/18\""));
  std::string fw = block(net, "resource \"google_compute_firewall\" \"gvnic_internal\"");
  CHECK(has(fw, "network", "google_compute_network.gvnic.name"));
  CHECK(has(fw, "source_ranges", "[\"192.168.64.0/18\"]"));
  CHECK(count(fw, "allow {") == 3);
  CHECK(net.find("resource \"google_compute_network\" \"gvnic\"") < net.find("resource \"google_compute_network\" \"rdma\""));
  CHECK(files.count("terraform/network.tf") == 1);
  sys.pools["a4"].rdma = false;
  CHECK(emit_terraform(sys).count("terraform/network.tf") == 0);
}

TEST_CASE("terraform: a service's identity may only read its model repository's bucket") {
  auto files = emit_terraform(served_system());
  std::string iam = files["terraform/iam.tf"];
  std::string sa = block(iam, "resource \"google_service_account\" \"shop_triton\"");
  CHECK(has(sa, "account_id", "\"shop-triton\""));
  CHECK(has(sa, "display_name", "\"trainc identity of service triton of shop\""));
  const std::string member = "\"serviceAccount:${google_service_account.shop_triton.email}\"";
  std::string viewer = block(iam, "resource \"google_storage_bucket_iam_member\" \"models_triton_objectviewer\"");
  CHECK(has(viewer, "bucket", "google_storage_bucket.models.name"));
  CHECK(has(viewer, "role", "\"roles/storage.objectViewer\""));
  CHECK(has(viewer, "member", member));
  std::string reader =
      block(iam, "resource \"google_storage_bucket_iam_member\" \"models_triton_legacybucketreader\"");
  CHECK(has(reader, "bucket", "google_storage_bucket.models.name"));
  CHECK(has(reader, "role", "\"roles/storage.legacyBucketReader\""));
  CHECK(has(reader, "member", member));
  CHECK(count(iam, "member = " + member) == 2);
  CHECK(count(iam, "resource \"google_storage_bucket_iam_member\"") == 4);

  // The system's identity keeps its labels and its read-write role on every bucket.
  CHECK(has(block(iam, "resource \"google_service_account\" \"trainer\""), "display_name",
            "\"trainc workload identity of shop\""));
  for (const char* store : {"models", "ckpt"}) {
    std::string m = block(iam, std::string("resource \"google_storage_bucket_iam_member\" \"") + store + "\"");
    CHECK(has(m, "role", "\"roles/storage.objectUser\""));
    CHECK(has(m, "member", "\"serviceAccount:${google_service_account.trainer.email}\""));
  }
  CHECK(has(block(iam, "resource \"google_service_account_iam_member\" \"workload_identity\""), "member",
            "\"serviceAccount:${var.project_id}.svc.id.goog[shop/trainer]\""));

  std::string wi = block(iam, "resource \"google_service_account_iam_member\" \"workload_identity_triton\"");
  CHECK(has(wi, "service_account_id", "google_service_account.shop_triton.name"));
  CHECK(has(wi, "member", "\"serviceAccount:${var.project_id}.svc.id.goog[shop/triton-server]\""));
  CHECK(has(wi, "depends_on", "[google_container_cluster.shop]"));

  std::string outputs = files["terraform/outputs.tf"];
  CHECK(has(outputs, "value", "google_service_account.trainer.email"));
  CHECK(has(block(outputs, "output \"service_gsa_emails\""), "triton", "google_service_account.shop_triton.email"));
  CHECK(emit_terraform(zonal_system())["terraform/outputs.tf"].find("service_gsa_emails") == std::string::npos);
}

TEST_CASE("terraform: services alone get an iam.tf, and grant labels never repeat") {
  System sys = zonal_system();
  sys.identity.reset();
  sys.stores["shared"] = gcs_store("shared", "shared-bucket");
  // shared-datasets + x and shared + datasets-x join to the same label.
  for (auto [name, store] : {std::pair{"x", "shared-datasets"}, std::pair{"datasets-x", "shared"}}) {
    Service s;
    s.name = name;
    s.identity = Identity{std::string(name) + "-server", "mnist-" + std::string(name), "", name,
                          {{store, "roles/storage.objectViewer"}}};
    sys.services[name] = s;
  }
  auto files = emit_terraform(sys);
  REQUIRE(files.count("terraform/iam.tf") == 1);
  std::string iam = files["terraform/iam.tf"];
  CHECK(has(block(iam, "resource \"google_storage_bucket_iam_member\" \"shared_datasets_x_objectviewer\""), "member",
            "\"serviceAccount:${google_service_account.mnist_datasets_x.email}\""));
  CHECK(has(block(iam, "resource \"google_storage_bucket_iam_member\" \"shared_datasets_x_objectviewer_2\""),
            "member", "\"serviceAccount:${google_service_account.mnist_x.email}\""));
  CHECK(iam.find("\"workload_identity\"") == std::string::npos);
  CHECK(iam.find("\"workload_identity_datasets_x\"") != std::string::npos);
  CHECK(iam.find("\"workload_identity_x\"") != std::string::npos);
  CHECK(files["terraform/outputs.tf"].find("gsa_email =") == std::string::npos);
}

TEST_CASE("terraform: services turn on Managed Prometheus") {
  const std::string header = "resource \"google_container_cluster\" \"shop\"";
  std::string served = block(emit_terraform(served_system())["terraform/cluster.tf"], header);
  CHECK(served.find("monitoring_config {\n    managed_prometheus {\n      enabled = true") != std::string::npos);
  CHECK(emit_terraform(zonal_system())["terraform/cluster.tf"].find("monitoring_config") == std::string::npos);
}

TEST_CASE("terraform: only autoscaled services give the metrics adapter a project role") {
  System sys = served_system();
  std::string iam = emit_terraform(sys)["terraform/iam.tf"];
  CHECK(emit_terraform(sys)["terraform/providers.tf"].find("data \"google_project\" \"this\" {") != std::string::npos);
  std::string adapter = block(iam, "resource \"google_project_iam_member\" \"metrics_adapter\"");
  CHECK(has(adapter, "project", "var.project_id"));
  CHECK(has(adapter, "role", "\"roles/monitoring.viewer\""));
  CHECK(has(adapter, "member",
            "\"principal://iam.googleapis.com/projects/${data.google_project.this.number}/locations/global/"
            "workloadIdentityPools/${var.project_id}.svc.id.goog/subject/ns/custom-metrics/sa/"
            "custom-metrics-stackdriver-adapter\""));
  CHECK(has(adapter, "depends_on", "[google_container_cluster.shop]"));
  CHECK(count(iam, "resource \"google_project_iam_member\"") == 2);  // and the nodes' role

  sys.services["triton"].min = sys.services["triton"].max = 2;
  REQUIRE_FALSE(sys.services["triton"].autoscaled());
  iam = emit_terraform(sys)["terraform/iam.tf"];
  CHECK(iam.find("metrics_adapter") == std::string::npos);
  CHECK(iam.find("data \"google_project\"") == std::string::npos);
  CHECK(emit_terraform(sys)["terraform/providers.tf"].find("google_project") == std::string::npos);
}

TEST_CASE("terraform: gcp.state puts the state in a gcs backend") {
  std::string versions = emit_terraform(environment_system())["terraform/versions.tf"];
  std::string tf = block(versions, "terraform");
  std::string backend = tf.substr(tf.find("  backend \"gcs\" {\n"));
  CHECK(has(backend, "bucket", "\"my-proj-tf-state\""));
  CHECK(has(backend, "prefix", "\"systems/env\""));
  CHECK(count(versions, "backend \"gcs\"") == 1);
  // prefix defaults to the system's name.
  System sys = environment_system();
  sys.gcp->state->prefix = "env";
  CHECK(has(emit_terraform(sys)["terraform/versions.tf"], "prefix", "\"env\""));
  sys.gcp->state.reset();
  CHECK(emit_terraform(sys)["terraform/versions.tf"].find("backend") == std::string::npos);
  CHECK(emit_terraform(zonal_system())["terraform/versions.tf"].find("backend") == std::string::npos);
}

/// The `service` of each google_project_service in apis.tf, in order.
static std::vector<std::string> apis(const std::string& apis_tf) {
  std::vector<std::string> out;
  std::regex service("\n  service += \"([^\"]+)\"\n");
  for (auto it = std::sregex_iterator(apis_tf.begin(), apis_tf.end(), service); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

TEST_CASE("terraform: apis.tf enables the APIs the system uses and leaves them on at destroy") {
  auto files = emit_terraform(zonal_system());
  const std::string tf = files["terraform/apis.tf"];
  CHECK(apis(tf) == std::vector<std::string>{"cloudresourcemanager.googleapis.com", "compute.googleapis.com",
                                             "container.googleapis.com", "iam.googleapis.com",
                                             "iamcredentials.googleapis.com", "storage.googleapis.com"});
  std::string container = block(tf, "resource \"google_project_service\" \"container\"");
  CHECK(has(container, "project", "var.project_id"));
  CHECK(has(container, "disable_on_destroy", "false"));
  CHECK(count(tf, "  disable_on_destroy = false\n") == 6);
  // What is made through an API waits for it; the cluster also for its nodes' role.
  CHECK(has(block(files["terraform/cluster.tf"], "resource \"google_container_cluster\" \"mnist_cluster\""),
            "depends_on",
            "[google_project_service.compute, google_project_service.container, google_project_iam_member.nodes]"));
  CHECK(has(block(files["terraform/storage.tf"], "resource \"google_storage_bucket\" \"data\""), "depends_on",
            "[google_project_service.storage]"));
  CHECK(has(block(files["terraform/iam.tf"], "resource \"google_service_account\" \"mnist_trainer\""),
            "depends_on", "[google_project_service.iam]"));

  // The bare minimum: no identity, no bucket.
  System bare = zonal_system();
  bare.identity.reset();
  bare.stores.clear();
  CHECK(apis(emit_terraform(bare)["terraform/apis.tf"]) ==
        std::vector<std::string>{"cloudresourcemanager.googleapis.com", "compute.googleapis.com",
                                 "container.googleapis.com", "iam.googleapis.com"});

  // Services bring Managed Prometheus (monitoring) and, autoscaled, the project number's lookup.
  auto served = emit_terraform(served_system());
  const auto served_apis = apis(served["terraform/apis.tf"]);
  CHECK(std::count(served_apis.begin(), served_apis.end(), "monitoring.googleapis.com") == 1);
  CHECK(std::count(served_apis.begin(), served_apis.end(), "cloudresourcemanager.googleapis.com") == 1);
  CHECK(has(block(served["terraform/cluster.tf"], "resource \"google_container_cluster\" \"shop\""), "depends_on",
            "[google_project_service.compute, google_project_service.container, google_project_service.monitoring, "
            "google_project_iam_member.nodes]"));
  CHECK(served["terraform/providers.tf"].find("data \"google_project\" \"this\" {\n  depends_on = "
                                              "[google_project_service.cloudresourcemanager]\n}") != std::string::npos);
  CHECK(served["terraform/iam.tf"].find("data \"google_project\"") == std::string::npos);
}

TEST_CASE("terraform: cloudbuild.googleapis.com only with ci.cloudbuild") {
  const auto with_registry = apis(emit_terraform(environment_system(kAll))["terraform/apis.tf"]);
  CHECK(with_registry == std::vector<std::string>{"artifactregistry.googleapis.com",
                                                  "cloudresourcemanager.googleapis.com", "compute.googleapis.com",
                                                  "container.googleapis.com", "iam.googleapis.com",
                                                  "storage.googleapis.com"});
  const auto with_ci = apis(emit_terraform(environment_system(kAll, kCloudBuild))["terraform/apis.tf"]);
  CHECK(std::count(with_ci.begin(), with_ci.end(), "cloudbuild.googleapis.com") == 1);
  CHECK(with_ci.size() == with_registry.size() + 1);
  const auto github = apis(emit_terraform(environment_system(
      kAll, "ci:\n  github:\n    workloadIdentityProvider: projects/1/locations/global/workloadIdentityPools/p/"
            "providers/gh\n    traincImage: trainc:1\n    serviceAccount: ci-deployer@my-proj.iam.gserviceaccount.com\n"))["terraform/apis.tf"]);
  CHECK(std::count(github.begin(), github.end(), "cloudbuild.googleapis.com") == 0);
}

TEST_CASE("terraform: a created network is a custom VPC with a subnet and two named secondary ranges") {
  auto files = emit_terraform(environment_system(kAll));
  REQUIRE(files.count("terraform/network.tf") == 1);
  const std::string net = files["terraform/network.tf"];
  std::string vpc = block(net, "resource \"google_compute_network\" \"cluster\"");
  CHECK(has(vpc, "name", "\"env-net\""));
  CHECK(has(vpc, "auto_create_subnetworks", "false"));
  CHECK(has(vpc, "depends_on", "[google_project_service.compute]"));
  std::string sub = block(net, "resource \"google_compute_subnetwork\" \"cluster\"");
  CHECK(has(sub, "name", "\"env-net-us-central1\""));
  CHECK(has(sub, "network", "google_compute_network.cluster.id"));
  CHECK(has(sub, "region", "var.region"));
  CHECK(has(sub, "ip_cidr_range", "\"10.10.0.0/20\""));
  CHECK(sub.find("  secondary_ip_range {\n    range_name    = \"env-net-us-central1-pods\"\n"
                 "    ip_cidr_range = \"10.20.0.0/14\"\n  }\n") != std::string::npos);
  CHECK(sub.find("  secondary_ip_range {\n    range_name    = \"env-net-us-central1-services\"\n"
                 "    ip_cidr_range = \"10.30.0.0/20\"\n  }\n") != std::string::npos);
  CHECK(net.find("rdma") == std::string::npos);

  // The cluster is VPC-native on it.
  std::string c = block(files["terraform/cluster.tf"], "resource \"google_container_cluster\" \"env\"");
  CHECK(has(c, "network", "google_compute_network.cluster.id"));
  CHECK(has(c, "subnetwork", "google_compute_subnetwork.cluster.id"));
  CHECK(has(c, "networking_mode", "\"VPC_NATIVE\""));
  CHECK(c.find("  ip_allocation_policy {\n    cluster_secondary_range_name  = \"env-net-us-central1-pods\"\n"
               "    services_secondary_range_name = \"env-net-us-central1-services\"\n  }\n") != std::string::npos);
  CHECK(c.find("enable_multi_networking") == std::string::npos);

  std::string outputs = files["terraform/outputs.tf"];
  CHECK(has(block(outputs, "output \"network\""), "value", "google_compute_network.cluster.name"));
  CHECK(has(block(outputs, "output \"subnetwork\""), "value", "google_compute_subnetwork.cluster.name"));
}

TEST_CASE("terraform: an existing network is named, never made") {
  auto files = emit_terraform(environment_system("  network: {name: shared-vpc, subnet: gke-subnet, create: false}\n"));
  CHECK(files.count("terraform/network.tf") == 0);
  std::string c = block(files["terraform/cluster.tf"], "resource \"google_container_cluster\" \"env\"");
  // Looked up, so that plan stops when they are missing.
  CHECK(has(c, "network", "data.google_compute_network.cluster.name"));
  CHECK(has(c, "subnetwork", "data.google_compute_subnetwork.cluster.name"));
  const std::string lookup = block(files["terraform/cluster.tf"], "data \"google_compute_network\" \"cluster\"");
  CHECK(has(lookup, "name", "\"shared-vpc\""));
  CHECK(has(lookup, "depends_on", "[google_project_service.compute]"));
  const std::string sub = block(files["terraform/cluster.tf"], "data \"google_compute_subnetwork\" \"cluster\"");
  CHECK(has(sub, "name", "\"gke-subnet\""));
  CHECK(has(sub, "region", "var.region"));
  CHECK(has(c, "cluster_secondary_range_name", "\"gke-subnet-pods\""));
  CHECK(has(c, "services_secondary_range_name", "\"gke-subnet-services\""));
  CHECK(has(block(files["terraform/outputs.tf"], "output \"network\""), "value", "\"shared-vpc\""));
  for (const auto& [path, text] : files) {
    CAPTURE(path);
    CHECK(text.find("resource \"google_compute_network\"") == std::string::npos);
    CHECK(text.find("resource \"google_compute_subnetwork\"") == std::string::npos);
  }
  // Without gcp.network: the project's default network, looked up too.
  std::string plain = emit_terraform(environment_system())["terraform/cluster.tf"];
  CHECK(plain.find("ip_allocation_policy") == std::string::npos);
  CHECK(has(plain, "network", "data.google_compute_network.default.name"));
  CHECK(has(block(plain, "data \"google_compute_network\" \"default\""), "name", "\"default\""));
  CHECK_FALSE(sets(plain, "subnetwork"));
}

TEST_CASE("terraform: the cluster's network and the RDMA network share network.tf and one ip_allocation_policy") {
  System sys = regional_system();
  sys.gcp->zone = sys.gcp->region + "-b";
  sys.gcp->network = Network{"big-net", "big-sub", "10.0.0.0/20", "10.4.0.0/14", "10.8.0.0/20", true, ""};
  auto files = emit_terraform(sys);
  const std::string net = files["terraform/network.tf"];
  CHECK(net.find("resource \"google_compute_network\" \"cluster\"") != std::string::npos);
  CHECK(net.find("resource \"google_compute_network\" \"rdma\"") != std::string::npos);
  const std::string c = files["terraform/cluster.tf"];
  CHECK(count(c, "ip_allocation_policy {") == 1);
  CHECK(count(c, "networking_mode") == 1);
  CHECK(has(c, "cluster_secondary_range_name", "\"big-sub-pods\""));
  CHECK(has(c, "enable_multi_networking", "true"));
}

TEST_CASE("terraform: a created registry, readable by the nodes on that repository alone") {
  auto files = emit_terraform(environment_system(kAll));
  REQUIRE(files.count("terraform/registry.tf") == 1);
  const std::string tf = files["terraform/registry.tf"];
  std::string repo = block(tf, "resource \"google_artifact_registry_repository\" \"env_images\"");
  CHECK(has(repo, "location", "\"us\""));
  CHECK(has(repo, "repository_id", "\"env-images\""));
  CHECK(has(repo, "format", "\"DOCKER\""));
  CHECK(has(repo, "description", "\"Images of trainc system env\""));
  CHECK(has(repo, "depends_on", "[google_project_service.artifactregistry]"));
  // The nodes' own account reads it (iam.tf).
  std::string grant =
      block(files["terraform/iam.tf"], "resource \"google_artifact_registry_repository_iam_member\" \"node_reader\"");
  CHECK(has(grant, "repository", "google_artifact_registry_repository.env_images.name"));
  CHECK(has(grant, "location", "google_artifact_registry_repository.env_images.location"));
  CHECK(has(grant, "role", "\"roles/artifactregistry.reader\""));
  CHECK(has(grant, "member", "\"serviceAccount:${google_service_account.env_nodes.email}\""));
  CHECK(files["terraform/providers.tf"].find("data \"google_project\" \"this\"") == std::string::npos);
  CHECK(has(files["terraform/node_pools.tf"], "service_account", "google_service_account.env_nodes.email"));
  // Never a project-wide read.
  for (const auto& [path, text] : files) {
    CAPTURE(path);
    CHECK(text.find("google_project_iam_member\" \"node_reader") == std::string::npos);
  }
  CHECK(has(block(files["terraform/outputs.tf"], "output \"registry\""), "value",
            "\"${google_artifact_registry_repository.env_images.location}-docker.pkg.dev/${var.project_id}/"
            "${google_artifact_registry_repository.env_images.repository_id}\""));

  // An existing repository: no resource, no project lookup, the nodes' read on it; the output names it.
  auto existing = emit_terraform(environment_system("  registry: {repository: images, create: false}\n"));
  CHECK(existing.count("terraform/registry.tf") == 0);
  const std::string kept =
      block(existing["terraform/iam.tf"], "resource \"google_artifact_registry_repository_iam_member\" \"node_reader\"");
  CHECK(has(kept, "project", "var.project_id"));
  CHECK(has(kept, "location", "\"us-central1\""));
  CHECK(has(kept, "repository", "\"images\""));
  CHECK(existing["terraform/providers.tf"].find("google_project\"") == std::string::npos);
  CHECK(has(block(existing["terraform/outputs.tf"], "output \"registry\""), "value",
            "\"us-central1-docker.pkg.dev/${var.project_id}/images\""));
  const auto existing_apis = apis(existing["terraform/apis.tf"]);
  CHECK(std::count(existing_apis.begin(), existing_apis.end(), "artifactregistry.googleapis.com") == 1);
  CHECK(emit_terraform(zonal_system()).count("terraform/registry.tf") == 0);
}

TEST_CASE("terraform: every block of a full environment is well-formed") {
  // Structural checks that need no terraform binary: braces balance, every file ends with one
  // newline, and each resource address is defined once across the folder.
  auto files = emit_terraform(environment_system(kAll, kCloudBuild));
  std::map<std::string, int> addresses;
  std::regex resource("\n(resource|data) \"([a-z_]+)\" \"([A-Za-z0-9_-]+)\" \\{");
  for (const auto& [path, text] : files) {
    CAPTURE(path);
    CHECK(count(text, "{") == count(text, "}"));
    CHECK(text.back() == '\n');
    CHECK(text.find("\n\n\n") == std::string::npos);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), resource); it != std::sregex_iterator(); ++it)
      ++addresses[(*it)[1].str() + "." + (*it)[2].str() + "." + (*it)[3].str()];
  }
  for (const auto& [address, n] : addresses) CHECK_MESSAGE(n == 1, address);
  // Every google_project_service a depends_on names exists.
  std::regex dep("google_project_service\\.([a-z]+)");
  for (const auto& [path, text] : files)
    for (auto it = std::sregex_iterator(text.begin(), text.end(), dep); it != std::sregex_iterator(); ++it)
      CHECK_MESSAGE(addresses.count("resource.google_project_service." + (*it)[1].str()) == 1, (*it)[0].str());
  for (const char* address : {"resource.google_compute_network.cluster", "resource.google_compute_subnetwork.cluster",
                              "resource.google_artifact_registry_repository.env_images",
                              "resource.google_project_service.cloudbuild", "resource.google_service_account.env_nodes",
                              "resource.google_project_iam_member.nodes"})
    CHECK_MESSAGE(addresses.count(address) == 1, address);
}

TEST_CASE("runbook: the state bucket comes first, and the APIs, network and registry are listed") {
  System sys = environment_system(kAll, kCloudBuild);
  OutputSink out;
  new_runbook_emitter()->emit(sys, k8s::plan(sys), out);
  const std::string md = out.files().at("README.md");
  const std::string create =
      "gcloud storage buckets create gs://my-proj-tf-state --project=my-proj --location=us-central1 "
      "--uniform-bucket-level-access\ngcloud storage buckets update gs://my-proj-tf-state --versioning\n";
  REQUIRE(md.find(create) != std::string::npos);
  CHECK(md.find(create) < md.find("terraform -chdir=terraform init"));
  CHECK(md.find("`gs://my-proj-tf-state/systems/env`") != std::string::npos);
  CHECK(md.find("`cloudbuild.googleapis.com`") != std::string::npos);
  CHECK(md.find("network `env-net`, subnet `env-net-us-central1`") != std::string::npos);
  CHECK(md.find("`us-docker.pkg.dev/my-proj/env-images`") != std::string::npos);

  System plain = zonal_system();
  OutputSink plain_out;
  new_runbook_emitter()->emit(plain, k8s::plan(plain), plain_out);
  const std::string plain_md = plain_out.files().at("README.md");
  CHECK(plain_md.find("gcloud storage buckets create") == std::string::npos);
  CHECK(plain_md.find("`container.googleapis.com`") != std::string::npos);
}

}  // namespace trainc
