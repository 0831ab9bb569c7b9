// The nodes' own service account (model NodeAccount): its name, the repositories it may read, and
// how Terraform writes it.
#include <doctest/doctest.h>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "emit/emitter.h"
#include "frontend/yaml_loader.h"
#include "model/lower.h"
#include "model/test_lowered.h"

namespace trainc {
namespace {

using testing::lowered;

/// A system whose steps pull from its own registry (a build), a repository of its project, one of
/// another project (twice), Docker Hub and gcr.io.
System pulling_system(const std::string& cluster = "pull") {
  return lowered(
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: pull\n"
      "gcp: {project: my-proj, region: us-central1, zone: us-central1-a}\n"
      "cluster:\n  name: " + cluster + "\n  pools:\n    cpu: {machine: e2-standard-8, nodes: 1}\n"
      "pipeline:\n"
      "  - {name: built, build: {base: 'python:3.12-slim'}, command: [python3, a.py]}\n"
      "  - {name: own, image: 'us-docker.pkg.dev/my-proj/ml/own:1.0', command: ['true']}\n"
      "  - {name: other, image: 'europe-west4-docker.pkg.dev/their-proj/models/x:2', command: ['true']}\n"
      "  - {name: again, image: 'europe-west4-docker.pkg.dev/their-proj/models/y@sha256:00', command: ['true']}\n"
      "  - {name: hub, image: 'python:3.12-slim', command: ['true']}\n"
      "  - {name: gcr, image: 'gcr.io/my-proj/tool:1', command: ['true']}\n");
}

std::map<std::string, std::string> emit_terraform(const System& sys) {
  OutputSink out;
  new_terraform_emitter()->emit(sys, k8s::plan(sys), out);
  return out.files();
}

std::string block(const std::string& file, const std::string& header) {
  size_t start = file.find(header + " {\n");
  REQUIRE_MESSAGE(start != std::string::npos, header);
  return file.substr(start, file.find("\n}\n", start) + 3 - start);
}

std::string regex_escape(const std::string& s) {
  return std::regex_replace(s, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
}

/// Whether `text` has the line `name = value` (with any alignment padding).
bool has(const std::string& text, const std::string& name, const std::string& value) {
  return std::regex_search(text, std::regex("\\n *" + regex_escape(name) + " += " + regex_escape(value) + "\\n"));
}

}  // namespace

TEST_CASE("node account: named after the cluster, at most 30 characters, apart for long names") {
  CHECK(node_account(pulling_system()).id == "pull-nodes");
  const std::string a = node_account(pulling_system("a-very-long-cluster-name-for-training-1")).id;
  const std::string b = node_account(pulling_system("a-very-long-cluster-name-for-training-2")).id;
  CHECK(a.size() <= 30);
  CHECK(a != b);
  CHECK(a.starts_with("a-very-long-cluster"));
  CHECK(a.ends_with("-nodes"));
  CHECK(std::regex_match(a, std::regex("[a-z]([-a-z0-9]*[a-z0-9])?")));
  // A cut at a hyphen leaves no double hyphen.
  CHECK(node_account(pulling_system("abcdefghijklmnopqr-stuvwxyz-long")).id.find("--") == std::string::npos);
  CHECK(node_account(pulling_system()).email(*pulling_system().gcp) == "pull-nodes@my-proj.iam.gserviceaccount.com");
}

TEST_CASE("node account: read on the system's registry and each Artifact Registry repository the images name") {
  const NodeAccount nodes = node_account(pulling_system());
  REQUIRE(nodes.repositories.size() == 3);
  CHECK(nodes.repositories[0] == PulledRepository{"us-central1", "my-proj", "pull", true});
  CHECK(nodes.repositories[1] == PulledRepository{"europe-west4", "their-proj", "models", false});
  CHECK(nodes.repositories[2] == PulledRepository{"us", "my-proj", "ml", false});

  CHECK_FALSE(pulled_repository("us-docker.pkg.dev/p/repo"));  // no image below the repository
  CHECK_FALSE(pulled_repository("docker.pkg.dev/p/repo/image"));
  CHECK_FALSE(pulled_repository("nvcr.io/nvidia/tritonserver:26.07-py3"));
  CHECK(pulled_repository("us-docker.pkg.dev/p/repo/a/b:1") == PulledRepository{"us", "p", "repo", false});
}

TEST_CASE("terraform: the nodes' account, its project role, and read on each repository, never project-wide") {
  auto files = emit_terraform(pulling_system());
  const std::string iam = files["terraform/iam.tf"];
  std::string sa = block(iam, "resource \"google_service_account\" \"pull_nodes\"");
  CHECK(has(sa, "account_id", "\"pull-nodes\""));
  CHECK(has(sa, "display_name", "\"trainc nodes of cluster pull\""));
  std::string role = block(iam, "resource \"google_project_iam_member\" \"nodes\"");
  CHECK(has(role, "role", "\"roles/container.defaultNodeServiceAccount\""));
  CHECK(has(role, "member", "\"serviceAccount:${google_service_account.pull_nodes.email}\""));
  std::string own = block(iam, "resource \"google_artifact_registry_repository_iam_member\" \"node_reader\"");
  CHECK(has(own, "repository", "google_artifact_registry_repository.pull.name"));
  std::string other =
      block(iam, "resource \"google_artifact_registry_repository_iam_member\" \"node_reader_their_proj_models\"");
  CHECK(has(other, "project", "\"their-proj\""));
  CHECK(has(other, "location", "\"europe-west4\""));
  CHECK(has(other, "repository", "\"models\""));
  CHECK(has(other, "role", "\"roles/artifactregistry.reader\""));
  CHECK(has(other, "member", "\"serviceAccount:${google_service_account.pull_nodes.email}\""));
  CHECK(has(block(iam, "resource \"google_artifact_registry_repository_iam_member\" \"node_reader_my_proj_ml\""),
            "repository", "\"ml\""));
  CHECK(iam.find("gcr.io") == std::string::npos);
  CHECK(iam.find("google_project_iam_member\" \"node_reader") == std::string::npos);

  // The cluster's first pool and every node pool run as it, with the cloud-platform scope.
  for (const char* file : {"terraform/cluster.tf", "terraform/node_pools.tf"}) {
    CAPTURE(file);
    CHECK(has(files[file], "service_account", "google_service_account.pull_nodes.email"));
    CHECK(has(files[file], "oauth_scopes", "[\"https://www.googleapis.com/auth/cloud-platform\"]"));
  }
}

}  // namespace trainc
