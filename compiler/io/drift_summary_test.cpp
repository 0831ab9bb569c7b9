#include "io/drift_summary.h"

#include <doctest/doctest.h>

namespace doctest {
template <>
struct StringMaker<std::vector<std::string>> {
  static String convert(const std::vector<std::string>& lines) {
    std::string out = "{";
    for (const auto& l : lines) out += "\n  \"" + l + "\"";
    return (out + "\n}").c_str();
  }
};
}  // namespace doctest

namespace trainc {

static const char* kJob = R"(apiVersion: batch/v1
kind: Job
metadata:
  name: mnist-train
  namespace: mnist
  labels:
    app.kubernetes.io/name: mnist
spec:
  parallelism: 4
  completions: 4
  template:
    spec:
      containers:
        - name: train
          image: img:1
          args: [--epochs=1]
)";

static std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

TEST_CASE("changed lines count an edited line once and a moved block by its lines") {
  CHECK(changed_lines("a\nb\nc\n", "a\nb\nc\n") == 0);
  CHECK(changed_lines("a\nb\nc\n", "a\nB\nc\n") == 1);
  CHECK(changed_lines("a\nb\nc\n", "a\nc\n") == 1);
  CHECK(changed_lines("a\nc\n", "a\nb\nb2\nc\n") == 2);
  CHECK(changed_lines("a\nb\nc\nd\n", "A\nb\nc\nD\n") == 2);
  CHECK(changed_lines("", "x\ny\n") == 2);
}

TEST_CASE("Kubernetes objects are matched by kind, namespace and name, with leaf paths") {
  std::string after = replace(replace(kJob, "parallelism: 4", "parallelism: 8"), "image: img:1", "image: img:2");
  after = replace(after, "app.kubernetes.io/name: mnist", "app.kubernetes.io/name: mnist2");
  after += "---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: mnist-runner, namespace: mnist}\n";
  std::string before = std::string(kJob) + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: old-entry}\n";
  auto lines = summarize_drift({{"k8s/train-job.yaml", before, after}});
  CHECK(lines == std::vector<std::string>{
                     "~ Job mnist-train: metadata.labels[\"app.kubernetes.io/name\"] mnist → mnist2",
                     "~ Job mnist-train: spec.parallelism 4 → 8",
                     "~ Job mnist-train: spec.template.spec.containers[0].image img:1 → img:2",
                     "+ ServiceAccount mnist-runner",
                     "- ConfigMap old-entry",
                 });
}

TEST_CASE("a step's new run in its file is the same Job renamed: what changed besides its name shows") {
  const std::string job = replace(replace(kJob, "name: mnist-train\n", "name: mnist-train-aaaaaaaaaa\n  labels: {trainc.dev/run: aaaaaaaaaa}\n"),
                                  "  namespace: mnist\n  labels:\n    app.kubernetes.io/name: mnist\n", "  namespace: mnist\n");
  std::string after = replace(replace(job, "mnist-train-aaaaaaaaaa", "mnist-train-bbbbbbbbbb"), "aaaaaaaaaa}", "bbbbbbbbbb}");
  after = replace(after, "parallelism: 4", "parallelism: 2");
  auto lines = summarize_drift({{"k8s/train-job.yaml", job, after}});
  CHECK(lines == std::vector<std::string>{
                     "~ Job mnist-train-aaaaaaaaaa → mnist-train-bbbbbbbbbb",
                     "~ Job mnist-train-bbbbbbbbbb: spec.parallelism 4 → 2",
                 });
}

TEST_CASE("an object that moves between files is not changed; added and removed fields and list items show") {
  std::string moved = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}\n";
  std::string after = replace(replace(kJob, "args: [--epochs=1]", "args: [--epochs=1, --lr=3]"),
                              "  completions: 4\n", "");
  after = replace(after, "  parallelism: 4\n", "  parallelism: 4\n  backoffLimit: 2\n");
  auto lines = summarize_drift({{"k8s/a.yaml", std::string(kJob) + "---\n" + moved, after},
                                {"k8s/b.yaml", std::nullopt, moved}});
  CHECK(lines == std::vector<std::string>{
                     "~ Job mnist-train: spec.backoffLimit (none) → 2",
                     "~ Job mnist-train: spec.template.spec.containers[0].args[1] (none) → --lr=3",
                     "~ Job mnist-train: spec.completions 4 → (none)",
                     "+ k8s/b.yaml",  // new, though the object in it only moved
                 });
}

TEST_CASE("changes per object are capped; strings, quoting and multi-line values are shown briefly") {
  std::string before = "kind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: '1'\n  b: x\n  c: x\n  d: x\n  e: x\n"
                       "  f: x\n  g: x\n  entry.sh: |\n    one\n    two\n";
  std::string after = "kind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: 1\n  b: y\n  c: y\n  d: y\n  e: y\n"
                      "  f: y\n  g: y\n  entry.sh: |\n    one\n    2\n";
  auto lines = summarize_drift({{"k8s/c.yaml", before, after}}, 3);
  CHECK(lines == std::vector<std::string>{
                     "~ ConfigMap c: data.a \"1\" → 1",
                     "~ ConfigMap c: data.b x → y",
                     "~ ConfigMap c: data.c x → y",
                     "~ ConfigMap c: … and 5 more",
                 });
  auto all = summarize_drift({{"k8s/c.yaml", before, after}}, 10);
  CHECK(all.back() == "~ ConfigMap c: data[\"entry.sh\"]: 1 line changed");
}

TEST_CASE("files that are not Kubernetes objects: Terraform blocks, YAML fields, line counts") {
  std::string tf = "# header\n\nresource \"google_container_node_pool\" \"gpu_pool\" {\n  name       = \"gpu-pool\"\n"
                   "  node_count = 4\n}\n\nresource \"google_container_cluster\" \"demo\" {\n  name = \"demo\"\n}\n";
  std::string tf2 = replace(tf, "node_count = 4", "node_count = 8") +
                    "\nresource \"google_container_node_pool\" \"tpu_v5e\" {\n  name = \"tpu-v5e\"\n}\n";
  tf2 = replace(tf2, "resource \"google_container_cluster\" \"demo\" {\n  name = \"demo\"\n}\n", "");
  auto lines = summarize_drift({
      {"README.md", "a\nb\n", "a\nc\nd\n"},
      {"model.yaml", "name: x\nsteps:\n  - nodes: 4\n", "name: x\nsteps:\n  - nodes: 8\n"},
      {"scripts/new.sh", std::nullopt, "#!/bin/sh\n"},
      {"terraform/node_pools.tf", tf, tf2},
      {"terraform/outputs.tf", "# a\n", "# b\n"},
      {"terraform/old.tf", "x\n", std::nullopt},
  });
  CHECK(lines == std::vector<std::string>{
                     "~ README.md (2 lines)",
                     "~ model.yaml: steps[0].nodes 4 → 8",
                     "+ scripts/new.sh",
                     "~ terraform/node_pools.tf: node pool gpu-pool, 1 line changed",
                     "+ terraform/node_pools.tf: node pool tpu-v5e",
                     "- terraform/node_pools.tf: google_container_cluster.demo",
                     "~ terraform/outputs.tf: 1 line changed",
                     "- terraform/old.tf",
                 });
}

TEST_CASE("a Kubernetes file that no longer parses is counted by lines") {
  auto lines = summarize_drift({{"k8s/x.yaml", "kind: [\n", std::string(kJob)}});
  CHECK(lines == std::vector<std::string>{"~ k8s/x.yaml (16 lines)"});
}

TEST_CASE("drift summary: a long value keeps its end, where an image's tag differs") {
  const std::string a = "us-central1-docker.pkg.dev/my-project/mnist/train:c-482890d0bfb991f7";
  const std::string b = "us-central1-docker.pkg.dev/my-project/mnist/train:c-0123456789abcdef";
  auto lines = summarize_drift({{"k8s/train-job.yaml", replace(kJob, "img:1", a), replace(kJob, "img:1", b)}});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("train:c-482890d0bfb991f7 → ") != std::string::npos);
  CHECK(lines[0].find("train:c-0123456789abcdef") != std::string::npos);
  CHECK(lines[0].find("…") != std::string::npos);
}

}  // namespace trainc
