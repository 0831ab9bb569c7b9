// Verify before writing: emitted objects are checked against the Kubernetes and CRD schemas.
#include "emit/verify_objects.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <set>

#include "driver.h"

namespace trainc {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json parse_one(const std::string& yaml) {
  auto docs = k8s_documents(yaml);
  REQUIRE(docs.size() == 1);
  return docs[0];
}

const char* kJob = R"(apiVersion: batch/v1
kind: Job
metadata:
  name: demo
  namespace: demo
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: busybox
          resources:
            limits: {cpu: 500m, memory: 1Gi, nvidia.com/gpu: 1}
          ports:
            - containerPort: 8080
          readinessProbe:
            httpGet: {path: /, port: http}
)";

const char* kJobSet = R"(apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: demo
spec:
  replicatedJobs:
    - name: slice
      replicas: 2
      template:
        spec:
          template:
            spec:
              containers:
                - name: train
                  image: busybox
)";

/// The problems of `yaml` after `edit`, as "path: message" lines.
std::string problems_of(const std::string& yaml, const std::function<void(json&)>& edit = {}) {
  json obj = parse_one(yaml);
  if (edit) edit(obj);
  std::string out;
  for (const auto& p : verify_object(obj, "k8s/x.yaml")) {
    CHECK(p.file == "k8s/x.yaml");
    out += fmt::format("{}: {}\n", p.path, p.message);
  }
  return out;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a valid Job and a valid JobSet pass, with IntOrString and Quantity in both of their forms") {
  CHECK(problems_of(kJob) == "");
  CHECK(problems_of(kJob, [](json& o) {
          o["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"] = 8080;
          o["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = 2;
        }) == "");
  CHECK(problems_of(kJobSet) == "");
}

TEST_CASE("a built-in kind: unknown field, wrong type and missing required field, each with its path") {
  const std::string unknown =
      problems_of(kJob, [](json& o) { o["spec"]["template"]["spec"]["containers"][0]["bogus"] = 1; });
  CHECK(has(unknown, "/spec/template/spec/containers/0/bogus: unknown field \"bogus\""));

  const std::string type = problems_of(kJob, [](json& o) { o["spec"]["backoffLimit"] = "two"; });
  CHECK(has(type, "/spec/backoffLimit: wrong type: expected \"integer\", got string \"two\""));

  const std::string missing =
      problems_of(kJob, [](json& o) { o["spec"]["template"]["spec"]["containers"][0].erase("name"); });
  CHECK(has(missing, "/spec/template/spec/containers/0: missing required field \"name\""));

  const std::string range = problems_of(kJob, [](json& o) { o["spec"]["backoffLimit"] = 4294967296LL; });
  CHECK(has(range, "/spec/backoffLimit:"));  // int32

  const std::string quantity = problems_of(
      kJob, [](json& o) { o["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "1 GB"; });
  CHECK(has(quantity, "/spec/template/spec/containers/0/resources/limits/memory:"));
}

TEST_CASE("a CRD kind: unknown field, wrong type and missing required field, each with its path") {
  const std::string unknown = problems_of(kJobSet, [](json& o) { o["spec"]["replicatedJobs"][0]["bogus"] = true; });
  CHECK(has(unknown, "/spec/replicatedJobs/0/bogus: unknown field \"bogus\""));

  const std::string type = problems_of(kJobSet, [](json& o) { o["spec"]["replicatedJobs"][0]["replicas"] = "2"; });
  CHECK(has(type, "/spec/replicatedJobs/0/replicas: wrong type"));

  const std::string missing = problems_of(kJobSet, [](json& o) { o["spec"]["replicatedJobs"][0].erase("template"); });
  CHECK(has(missing, "/spec/replicatedJobs/0: missing required field \"template\""));

  // The Pod template inside the CRD is strict too, and the metadata is checked as ObjectMeta.
  const std::string deep = problems_of(kJobSet, [](json& o) {
    o["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] =
        "Always";
    o["metadata"]["lables"] = json::object();
  });
  CHECK(has(deep, "/spec/replicatedJobs/0/template/spec/template/spec/containers/0/imagePullPolcy: unknown field"));
  CHECK(has(deep, "/metadata/lables: unknown field"));
}

TEST_CASE("manifests are read as the API server reads YAML: 1.1 booleans and octal, null values dropped") {
  json env = parse_one("a: yes\nb: 'yes'\nc: 0755\nd: null\ne: ~\nf: 1.5\ng: 12_000\nh: 2024-01-01\n");
  CHECK(env["a"] == true);
  CHECK(env["b"] == "yes");
  CHECK(env["c"] == 493);
  CHECK_FALSE(env.contains("d"));
  CHECK_FALSE(env.contains("e"));
  CHECK(env["f"] == 1.5);
  CHECK(env["g"] == 12000);
  CHECK(env["h"] == "2024-01-01");
  // An env value written `yes` unquoted is a boolean, which the API server refuses for a string.
  std::string yaml = kJob;
  yaml += "          env:\n            - name: FLAG\n              value: yes\n";
  const std::string out = problems_of(yaml);
  CHECK(has(out, "/spec/template/spec/containers/0/env/0/value: wrong type: expected \"string\", got boolean true"));
}

TEST_CASE("read back: block, folded and quoted strings, flow collections, several documents, tags") {
  const auto docs = k8s_documents(
      "# a comment\n"
      "script: |\n  #!/bin/sh\n  echo 'a: b'\n\n  exit 0\n"
      "folded: >-\n  one\n  two\n"
      "dq: \"on\\n\\u00e9\"\n"
      "flow: {cpu: 500m, n: 2, list: [1, '2', off]}\n"
      "tagged: !!str 0755\n"
      "empty:\n"
      "nested:\n  - - 1\n    - 0x1F\n  - k: -.inf\n"
      "---\n"
      "---\n"
      "second: 1e3\n");
  REQUIRE(docs.size() == 2);  // an empty document is none
  const json& d = docs[0];
  CHECK(d["script"] == "#!/bin/sh\necho 'a: b'\n\nexit 0\n");
  CHECK(d["folded"] == "one two");
  CHECK(d["dq"] == "on\n\u00e9");
  CHECK(d["flow"] == json{{"cpu", "500m"}, {"n", 2}, {"list", {1, "2", false}}});
  CHECK(d["tagged"] == "0755");
  CHECK_FALSE(d.contains("empty"));
  CHECK(d["nested"] == json::parse(R"([[1, 31], {"k": "-.inf"}])"));
  CHECK(docs[1]["second"] == 1000.0);
  CHECK_THROWS_AS(k8s_documents("a: &x 1\nb: *x\n"), InvalidObjectError);
  CHECK_THROWS_AS(k8s_documents("? [a]\n: 1\n"), InvalidObjectError);
  try {
    k8s_documents("a: 1\n b: 2\n");
    FAIL("expected YamlSyntaxError");
  } catch (const YamlSyntaxError& e) {
    CHECK(has(e.what(), "line 2"));
  }
}

TEST_CASE("an unknown kind, and an object without a kind, are problems") {
  CHECK(has(problems_of("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: x}\n"),
            "no schema for apiVersion \"example.com/v1\" kind \"Widget\""));
  CHECK(has(problems_of("metadata: {name: x}\n"), "needs apiVersion and kind"));
}

TEST_CASE("check_objects names the object, the file, the field and the complaint; the kustomization is skipped") {
  OutputSink files;
  std::string bad = kJob;
  bad += "  bogusField: 1\n";
  files.add("k8s/demo-job.yaml", bad);
  files.add("k8s/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [demo-job.yaml]\n");
  files.add("README.md", "not checked\n");
  try {
    check_objects(files);
    FAIL("expected InvalidObjectError");
  } catch (const InvalidObjectError& e) {
    const std::string what = e.what();
    CHECK(has(what, "Job/demo (k8s/demo-job.yaml) at /spec/bogusField: unknown field \"bogusField\""));
    CHECK(has(what, fmt::format("Kubernetes {} OpenAPI", k8s_schema_version())));
    CHECK_FALSE(has(what, "kustomization"));
  }
}

TEST_CASE("every example's objects pass") {
  std::vector<fs::path> specs;
  for (const auto& dir : fs::directory_iterator(fs::path(TRAINC_SOURCE_ROOT) / "examples"))
    for (const char* name : {"spec.yaml", "spec.jsonnet"})
      if (fs::exists(dir.path() / name)) specs.push_back(dir.path() / name);
  REQUIRE(specs.size() >= 5);
  std::set<std::string> kinds;
  size_t objects = 0;
  for (const auto& spec : specs) {
    CAPTURE(spec.string());
    std::string error;
    SourcePtr src = read_source(spec.string(), error);
    REQUIRE(src);
    Diagnostics diags;
    std::optional<Compiled> compiled;
    // compile_source runs check_objects itself: an invalid object throws here.
    CHECK_NOTHROW(compiled = compile_source(src, diags));
    REQUIRE(compiled);
    for (const auto& p : verify_objects(compiled->files))
      FAIL(p.object << " " << p.file << " " << p.path << ": " << p.message);
    for (const auto& [path, text] : compiled->files.under("k8s/"))
      for (const auto& doc : k8s_documents(text)) {
        ++objects;
        kinds.insert(doc.value("apiVersion", "") + " " + doc.value("kind", ""));
      }
  }
  MESSAGE(fmt::format("{} objects of {} kinds", objects, kinds.size()));
  CHECK(objects > 50);
  CHECK(kinds.count("jobset.x-k8s.io/v1alpha2 JobSet"));
  CHECK(kinds.count("ray.io/v1 RayCluster"));
  CHECK(kinds.count("batch/v1 Job"));
}

}  // namespace trainc
