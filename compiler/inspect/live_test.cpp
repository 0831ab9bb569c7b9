// diff --live's classification with a cluster played here (FakeCluster): the server's answers are
// given, so what is judged is trainc's reading of them. The real API server's answers are judged in
// the cluster suite (tests/cluster_test.sh, tests/cluster/live.py).
#include "inspect/live.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "base/yaml_tree.h"
#include "driver.h"
#include "k8s/update_rules.h"

using namespace trainc;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Compiled compile_text(const std::string& yaml) {
  Diagnostics diags;
  const std::string name = (fs::path(TRAINC_SOURCE_ROOT) / "examples/xgb-triton/spec.yaml").string();
  auto c = compile_source(std::make_shared<SourceFile>(name, yaml), diags);
  REQUIRE_MESSAGE(c, diags.render_text());
  return std::move(*c);
}

/// The manifest in `yaml` as JSON with its scalars typed (YAML's core schema, as kubectl reads it).
json typed(const YAML::Node& n) {
  if (n.IsMap()) {
    json o = json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = typed(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (const auto& x : n) a.push_back(typed(x));
    return a;
  }
  if (n.IsNull()) return nullptr;
  const std::string s = n.as<std::string>();
  if (n.Tag() == "!") return s;  // quoted
  if (s == "true" || s == "false") return s == "true";
  try {
    size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  return s;
}

json parse(const std::string& yaml) { return typed(read_yaml_documents(yaml).at(0)); }

/// A cluster that holds objects as they were applied (no defaulting), and refuses what it is told to.
class FakeCluster : public LiveCluster {
 public:
  std::map<k8s::ObjectKey, json> objects;
  std::set<std::string> refuse;  ///< "Kind/name" whose dry run the server refuses
  bool forbid_dry_runs = false;  ///< the credentials may only read (RBAC refuses every dry run)
  int dry_runs = 0;

  static k8s::ObjectKey key(const json& o) { return k8s::object_key(o); }

  /// What `kubectl apply` would leave: the manifest, with kubectl's record of it.
  static json applied(json m, int created) {
    m["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = m.dump();
    m["metadata"]["creationTimestamp"] = fmt::format("2026-12-0{}T00:00:00Z", created);
    m["metadata"]["uid"] = fmt::format("uid-{}", created);
    return m;
  }
  void apply_all(const OutputFiles& files, int created = 1) {
    for (const auto& o : output_objects(files, "out")) {
      const json m = parse(o.yaml);
      objects[key(m)] = applied(m, created);
    }
  }
  Answer get(const std::string& yaml) override {
    std::lock_guard<std::mutex> lock(mu_);
    const json m = parse(yaml);
    Answer a;
    const auto it = objects.find(key(m));
    if (it == objects.end()) {
      a.missing = true;
      a.message = "Error from server (NotFound): not found";
      return a;
    }
    a.ok = true;
    a.object = it->second;
    return a;
  }
  Answer dry_run_apply(const std::string& yaml) override {
    std::lock_guard<std::mutex> lock(mu_);
    const json m = parse(yaml);
    Answer a;
    const std::string ref = m.value("kind", "") + "/" + m["metadata"].value("name", "");
    ++dry_runs;
    if (forbid_dry_runs) {
      a.forbidden = true;
      a.message = "Error from server (Forbidden): deployments.apps is forbidden: User \"planner\" cannot patch";
      return a;
    }
    if (refuse.count(ref)) {
      a.message = fmt::format("Error from server (Invalid): {} is invalid: spec.selector: field is immutable", ref);
      return a;
    }
    const auto it = objects.find(key(m));
    a.ok = true;
    a.object = applied(m, 1);
    if (it != objects.end()) a.object["metadata"] = it->second["metadata"];
    a.object["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = m.dump();
    return a;
  }
  Answer list(const std::string& type, const std::string& ns, const std::string& selector) override {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string kind = type == "jobs.batch"                 ? "Job"
                             : type.starts_with("jobsets.")       ? "JobSet"
                             : type.starts_with("rayjobs.")       ? "RayJob"
                             : type == "configmaps"               ? "ConfigMap"
                             : type == "services"                 ? "Service"
                             : type == "deployments.apps"         ? "Deployment"
                             : type == "serviceaccounts"          ? "ServiceAccount"
                                                                  : "-";
    const std::string part_of = selector.substr(selector.find("part-of=") + 8, selector.find(',', selector.find("part-of=")) -
                                                                                    selector.find("part-of=") - 8);
    Answer a;
    a.ok = true;
    a.object = {{"items", json::array()}};
    for (const auto& [k, o] : objects)
      if (k.kind == kind && k.ns == ns && o["metadata"].value("labels", json::object()).value("app.kubernetes.io/part-of", "") == part_of)
        a.object["items"].push_back(o);
    return a;
  }

 private:
  std::mutex mu_;
};

const ObjectChange* find(const AgainstPlan& a, const std::string& kind, const std::string& name_part) {
  for (const auto& c : a.objects)
    if (c.key.kind == kind && c.key.name.find(name_part) != std::string::npos) return &c;
  return nullptr;
}

const std::string& triton() {
  static const std::string spec = read(fs::path(TRAINC_SOURCE_ROOT) / "examples/xgb-triton/spec.yaml");
  return spec;
}

AgainstPlan live(const Compiled& c, FakeCluster& cluster) {
  return diff_live(c.system, make_plan(c.system), c.files.files(), cluster, "the fake cluster");
}

}  // namespace

TEST_CASE("diff --live: on a cluster without the system, every object is made and every step runs") {
  const Compiled c = compile_text(triton());
  FakeCluster cluster;
  const AgainstPlan a = live(c, cluster);
  for (const auto& o : a.objects) CHECK_MESSAGE(o.action == "create", o.key.describe(), " ", o.action);
  REQUIRE(a.runs.size() == c.system.steps.size());
  CHECK(live_exit_code(a) == 1);
  CHECK(a.drift.empty());
}

TEST_CASE("diff --live: the output as applied changes nothing; a step's finished earlier runs follow its history") {
  const Compiled c = compile_text(triton());
  FakeCluster cluster;
  cluster.apply_all(c.files.files(), 5);
  AgainstPlan a = live(c, cluster);
  for (const auto& o : a.objects) CHECK_MESSAGE(o.action == "unchanged", o.key.describe(), " ", o.action, " ", o.detail);
  CHECK(a.runs.empty());
  CHECK(live_exit_code(a) == 0);

  // Three earlier finished runs of train (history 3 keeps two of them) and an unfinished one.
  const auto& objects = cluster.objects;
  json train;
  for (const auto& [k, o] : objects)
    if (k.kind == "Job" && o["metadata"]["labels"].value("trainc.dev/step", "") == "train") train = o;
  REQUIRE(!train.is_null());
  for (int i = 1; i <= 4; ++i) {
    json old = train;
    old["metadata"]["name"] = fmt::format("xgb-triton-train-old{}", i);
    old["metadata"]["creationTimestamp"] = fmt::format("2026-12-0{}T00:00:00Z", i);
    if (i < 4) old["status"] = {{"conditions", {{{"type", "Complete"}, {"status", "True"}}}}};
    cluster.objects[k8s::object_key(old)] = old;
  }
  a = live(c, cluster);
  const ObjectChange* running = find(a, "Job", "old4");
  REQUIRE(running);
  CHECK(running->action == "remove");
  CHECK(running->detail.find("not finished") != std::string::npos);
  REQUIRE(find(a, "Job", "old3"));
  CHECK(find(a, "Job", "old3")->action == "keep");
  CHECK(find(a, "Job", "old2")->action == "keep");
  CHECK(find(a, "Job", "old1")->action == "remove");
  CHECK(live_exit_code(a) == 1);
}

TEST_CASE("diff --live: a Deployment scaled by hand is drift; a run deleted by hand is drift and runs again") {
  const Compiled c = compile_text(triton());
  FakeCluster cluster;
  cluster.apply_all(c.files.files());
  k8s::ObjectKey deploy, job;
  for (auto& [k, o] : cluster.objects) {
    if (k.kind == "Deployment") {
      deploy = k;
      o["spec"]["replicas"] = 3;
    }
    if (k.kind == "Job" && o["metadata"]["labels"].value("trainc.dev/step", "") == "train") job = k;
  }
  cluster.objects.erase(job);
  const AgainstPlan a = live(c, cluster);
  REQUIRE(a.drift.size() == 2);
  std::set<std::string> drifted;
  for (const auto& d : a.drift) drifted.insert(d.key.kind);
  CHECK(drifted == std::set<std::string>{"Deployment", "Job"});
  for (const auto& d : a.drift)
    if (d.key.kind == "Deployment") {
      REQUIRE(d.fields.size() == 1);
      CHECK(d.fields[0] == "/spec/replicas: applied 1, on the cluster 3");
    }
  const ObjectChange* d = find(a, "Deployment", deploy.name);
  REQUIRE(d);
  CHECK(d->action == "update");
  REQUIRE(a.runs.size() == 1);
  CHECK(a.runs[0].step == "train");
  CHECK(live_exit_code(a) == 1);
}

TEST_CASE("diff --live: a change the server refuses is named with its words, and exits 3") {
  const Compiled c = compile_text(triton());
  FakeCluster cluster;
  cluster.apply_all(c.files.files());
  std::string name;
  for (const auto& [k, o] : cluster.objects)
    if (k.kind == "Deployment") name = k.name;
  cluster.refuse.insert("Deployment/" + name);
  const AgainstPlan a = live(c, cluster);
  const ObjectChange* d = find(a, "Deployment", name);
  REQUIRE(d);
  CHECK(d->action == "refused");
  CHECK(d->detail.find("field is immutable") != std::string::npos);
  CHECK(live_exit_code(a) == 3);
  CHECK(render_against_text(a).find("refused") != std::string::npos);
}

namespace {

/// What the server adds to what was applied: defaults no apply sets, which a read-only comparison
/// must not take for changes.
void add_server_defaults(FakeCluster& cluster) {
  for (auto& [k, o] : cluster.objects) {
    o["metadata"]["generation"] = 2;
    auto set = [](json& at, const char* key, json v) {
      if (!at.contains(key)) at[key] = std::move(v);
    };
    if (k.kind == "Deployment") {
      set(o["spec"], "revisionHistoryLimit", 10);
      set(o["spec"], "progressDeadlineSeconds", 600);
      for (auto& ctr : o["spec"]["template"]["spec"]["containers"]) {
        set(ctr, "terminationMessagePath", "/dev/termination-log");
        set(ctr, "imagePullPolicy", "IfNotPresent");
      }
    }
    if (k.kind == "Service") set(o["spec"], "sessionAffinity", "None");
  }
}

}  // namespace

TEST_CASE("diff --live --read-only: no dry run; the output as applied, with the server's defaults, changes nothing") {
  const Compiled c = compile_text(triton());
  FakeCluster cluster;
  cluster.apply_all(c.files.files());
  add_server_defaults(cluster);
  const AgainstPlan a = diff_live(c.system, make_plan(c.system), c.files.files(), cluster, "the fake cluster",
                                  {.read_only = true});
  CHECK(cluster.dry_runs == 0);
  for (const auto& o : a.objects) CHECK_MESSAGE(o.action == "unchanged", o.key.describe(), " ", o.action, " ", o.detail);
  CHECK(a.drift.empty());
  CHECK(live_exit_code(a) == 0);
  CHECK(std::any_of(a.notes.begin(), a.notes.end(), [](const std::string& n) { return n.find("--read-only") != std::string::npos; }));
}

TEST_CASE("diff --live where dry runs are forbidden: read-only, with drift, changes and an immutable field judged by the rules") {
  const Compiled c = compile_text(triton());
  FakeCluster cluster;
  cluster.forbid_dry_runs = true;
  cluster.apply_all(c.files.files());
  add_server_defaults(cluster);
  std::string deploy;
  for (auto& [k, o] : cluster.objects)
    if (k.kind == "Deployment") {
      deploy = k.name;
      o["spec"]["replicas"] = 3;  // scaled by hand
    }
  AgainstPlan a = live(c, cluster);
  CHECK(cluster.dry_runs > 0);
  REQUIRE(a.drift.size() == 1);
  INFO(fmt::format("{}", fmt::join(a.drift[0].fields, "; ")));
  REQUIRE(a.drift[0].fields.size() == 1);
  CHECK(a.drift[0].fields[0] == "/spec/replicas: applied 1, on the cluster 3");
  const ObjectChange* d = find(a, "Deployment", deploy);
  REQUIRE(d);
  CHECK(d->action == "update");
  CHECK(std::any_of(a.notes.begin(), a.notes.end(),
                    [](const std::string& n) { return n.find("may not make a server-side dry run") != std::string::npos; }));
  CHECK(live_exit_code(a) == 1);

  // The last apply had another selector (an earlier output): the change cannot be made in place.
  for (auto& [k, o] : cluster.objects)
    if (k.kind == "Deployment") {
      o["spec"]["replicas"] = 1;
      o["spec"]["selector"]["matchLabels"]["earlier"] = "yes";
      json last = json::parse(o["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].get<std::string>());
      last["spec"]["selector"]["matchLabels"]["earlier"] = "yes";
      o["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = last.dump();
    }
  a = live(c, cluster);
  d = find(a, "Deployment", deploy);
  REQUIRE(d);
  CHECK(d->action == "refused");
  CHECK(d->detail.find("/spec/selector") != std::string::npos);
  CHECK(d->detail.find("read-only") != std::string::npos);
  CHECK(a.drift.empty());
  CHECK(live_exit_code(a) == 3);
}
