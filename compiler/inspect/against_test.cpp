#include "inspect/against.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "driver.h"

using namespace trainc;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string edit(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  return text.replace(at, from.size(), to);
}

Compiled compile_text(const std::string& yaml) {
  Diagnostics diags;
  auto c = compile_source(std::make_shared<SourceFile>("spec.yaml", yaml), diags);
  REQUIRE_MESSAGE(c, diags.render_text());
  return std::move(*c);
}

AgainstPlan against(const std::string& old_spec, const std::string& new_spec) {
  const Compiled old = compile_text(old_spec), neu = compile_text(new_spec);
  return plan_against(neu.system, make_plan(neu.system), old.files.files(), neu.files.files(), "out/old");
}

const ObjectChange* change(const AgainstPlan& a, const std::string& kind, const std::string& file) {
  for (const auto& c : a.objects)
    if (c.key.kind == kind && c.file == file) return &c;
  return nullptr;
}

const std::string& xgb() {
  static const std::string spec = read(fs::path(TRAINC_SOURCE_ROOT) / "examples/xgb-a4/spec.yaml");
  return spec;
}

}  // namespace

TEST_CASE("plan --against: the same output changes nothing and runs nothing") {
  const AgainstPlan a = against(xgb(), xgb());
  CHECK(a.runs.empty());
  for (const auto& c : a.objects) CHECK_MESSAGE(c.action == "unchanged", c.key.describe());
  for (const auto& p : a.pools) CHECK(p.action == "unchanged");
  CHECK(render_against_text(a).find("Steps that run: none") != std::string::npos);
}

TEST_CASE("plan --against: an argument of a step re-runs it, not the step before it") {
  const AgainstPlan a = against(xgb(), edit(xgb(), "rounds: 2000", "rounds: 2500"));
  REQUIRE(a.runs.size() >= 1);
  CHECK(std::any_of(a.runs.begin(), a.runs.end(), [](const auto& r) { return r.step == "train"; }));
  CHECK_FALSE(std::any_of(a.runs.begin(), a.runs.end(), [](const auto& r) { return r.step == "datagen"; }));
  const ObjectChange* job = change(a, "JobSet", "k8s/train-jobset.yaml");
  REQUIRE(job);
  // The JobSet keeps its name and is refused in place (replace), or is named by its run (rerun).
  CHECK((job->action == "replace" || job->action == "rerun"));
  CHECK(job->step == "train");
  const ObjectChange* datagen = change(a, "Job", "k8s/datagen-job.yaml");
  REQUIRE(datagen);
  CHECK(datagen->action == "unchanged");
  for (const auto& r : a.runs)
    if (r.step == "train") CHECK(r.gpus == 16);
}

TEST_CASE("plan --against: pools resize or are replaced") {
  const AgainstPlan resized = against(xgb(), edit(xgb(), "autoscaling: {min: 0, max: 2}", "autoscaling: {min: 0, max: 4}"));
  bool seen = false;
  for (const auto& p : resized.pools)
    if (p.pool == "a4") {
      seen = true;
      CHECK(p.action == "resize");
      REQUIRE_FALSE(p.fields.empty());
      CHECK(p.fields[0].find("autoscaling") == 0);
    }
  CHECK(seen);
  const AgainstPlan spot = against(xgb(), edit(xgb(), "provisioning: flex-start", "provisioning: spot"));
  for (const auto& p : spot.pools)
    if (p.pool == "a4") CHECK(p.action == "replace");
  const AgainstPlan machine = against(xgb(), edit(xgb(), "system: {machine: e2-standard-4}", "system: {machine: e2-standard-8}"));
  for (const auto& p : machine.pools)
    if (p.pool == "system") {
      CHECK(p.action == "replace");
      CHECK(p.detail.find("killed") != std::string::npos);
    }
}

TEST_CASE("plan --against: a removed step is pruned; its JSON meets schemas/plan.v1.schema.json") {
  const std::string two = xgb();
  const std::string one = two.substr(0, two.find("  - name: train"));
  const AgainstPlan a = against(two, one);
  const ObjectChange* job = change(a, "JobSet", "k8s/train-jobset.yaml");
  REQUIRE(job);
  CHECK(job->action == "remove");
  CHECK(job->detail.find("no longer in the spec") != std::string::npos);

  nlohmann::json schema_doc = nlohmann::json::parse(read(fs::path(TRAINC_SOURCE_ROOT) / "schemas/plan.v1.schema.json"));
  valijson::Schema schema;
  valijson::SchemaParser parser;
  valijson::adapters::NlohmannJsonAdapter schema_adapter(schema_doc);
  parser.populateSchema(schema_adapter, schema);
  const Compiled neu = compile_text(one);
  for (const AgainstPlan& p : {a, against(xgb(), edit(xgb(), "rounds: 2000", "rounds: 2500"))}) {
    auto doc_o = plan_json(make_plan(neu.system));
    doc_o["against"] = against_json(p);
    nlohmann::json doc = nlohmann::json::parse(doc_o.dump());
    valijson::Validator validator;
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter doc_adapter(doc);
    std::string why;
    if (!validator.validate(schema, doc_adapter, &results)) {
      valijson::ValidationResults::Error e;
      while (results.popError(e)) {
        for (const auto& c : e.context) why += c;
        why += ": " + e.description + "\n";
      }
    }
    CHECK_MESSAGE(why.empty(), why);
  }
}

TEST_CASE("plan --against: a step named by its run re-runs when the name changes; the old run is history") {
  // Output where each step's Job is named <system>-<step>-<run> and labelled with its step.
  auto runs_named = [](OutputFiles files, const std::string& run) {
    std::string& job = files.at("k8s/train-jobset.yaml");  // 16 GPUs on 2 nodes: a gang
    if (job.find("trainc.dev/run:") != std::string::npos) return files;  // trainc names runs itself
    job = edit(job, "  name: xgb-a4-train\n", "  name: xgb-a4-train-" + run + "\n");
    job = edit(job, "  labels:\n", "  labels:\n    trainc.dev/step: train\n    trainc.dev/run: " + run + "\n");
    return files;
  };
  const Compiled old = compile_text(xgb()), neu = compile_text(edit(xgb(), "rounds: 2000", "rounds: 2500"));
  const OutputFiles before = runs_named(old.files.files(), "0123456789");
  const AgainstPlan a = plan_against(neu.system, make_plan(neu.system), before,
                                     runs_named(neu.files.files(), "abcdef0123"), "out/old");
  REQUIRE(a.runs.size() == 1);
  CHECK(a.runs[0].step == "train");
  int seen = 0;
  std::string old_name;
  for (const auto& c : a.objects)
    if (c.key.kind == "JobSet" && c.step == "train" && c.action == "keep") {  // history: 3 by default
      ++seen;
      old_name = c.key.name;
      CHECK(c.detail.find("history") != std::string::npos);
    }
  for (const auto& c : a.objects)
    if (c.key.kind == "JobSet" && c.step == "train" && c.action != "keep") {
      ++seen;
      CHECK(c.action == "rerun");
      CHECK(c.detail.find(old_name) != std::string::npos);
    }
  CHECK(seen == 2);
  // The same runs again: nothing starts.
  const AgainstPlan same = plan_against(old.system, make_plan(old.system), before, before, "out/old");
  CHECK(same.runs.empty());
}

TEST_CASE("plan --against: a step after a re-run step is named again, and says why") {
  auto runs_named = [](OutputFiles files, const std::string& run) {
    for (const char* step : {"datagen", "train"}) {
      std::string& job = files.at(fmt::format("k8s/{}-{}.yaml", step, step == std::string("train") ? "jobset" : "job"));
      if (job.find("trainc.dev/run:") != std::string::npos) continue;  // trainc names runs itself
      job = edit(job, fmt::format("  name: xgb-a4-{}\n", step), fmt::format("  name: xgb-a4-{}-{}\n", step, run));
      job = edit(job, "  labels:\n", fmt::format("  labels:\n    trainc.dev/step: {}\n", step));
    }
    return files;
  };
  const Compiled old = compile_text(xgb()), neu = compile_text(edit(xgb(), "features: 400", "features: 500"));
  const AgainstPlan a = plan_against(neu.system, make_plan(neu.system), runs_named(old.files.files(), "0123456789"),
                                     runs_named(neu.files.files(), "abcdef0123"), "out/old");
  REQUIRE(a.runs.size() == 2);
  CHECK(a.runs[0].step == "datagen");
  CHECK(a.runs[0].why.find("what it runs changed") != std::string::npos);
  CHECK(a.runs[1].step == "train");
  CHECK(a.runs[1].why.find("it needs 'datagen'") != std::string::npos);
}
