#include "inspect/explain.h"

#include <cctype>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "frontend/schema_check.h"
#include "model/images.h"

using namespace trainc;

namespace {
const nlohmann::ordered_json& schema() {
  static const auto s = nlohmann::ordered_json::parse(spec_schema_text());
  return s;
}
}  // namespace

TEST_CASE("explain: every schema path round-trips, and names itself") {
  const auto paths = schema_paths(schema());
  CHECK(paths.size() > 150);
  for (const auto& p : paths) {
    std::string error;
    auto text = explain(schema(), p, false, error);
    REQUIRE_MESSAGE(text, p << ": " << error);
    CHECK_MESSAGE(text->starts_with("FIELD:    " + p + "\n"), p);
    CHECK_MESSAGE(text->find("\nTYPE:     ") != std::string::npos, p);
    // A concrete key works wherever the schema has a map: <name> -> gpu.
    std::string concrete = p;
    for (size_t at; (at = concrete.find("<name>")) != std::string::npos;) concrete.replace(at, 6, "gpu");
    CHECK_MESSAGE(explain(schema(), concrete, false, error), concrete << ": " << error);
  }
}

TEST_CASE("explain: a field's type, default, allowed values and description") {
  std::string error;
  auto t = explain(schema(), "pipeline.checkpoints.pattern", false, error);
  REQUIRE(t);
  CHECK(t->find("TYPE:     string\n") != std::string::npos);
  CHECK(t->find("DEFAULT:  *\n") != std::string::npos);
  CHECK(t->find("newest match") != std::string::npos);
  auto pool = explain(schema(), "cluster.pools.gpu.provisioning", false, error);
  REQUIRE(pool);
  CHECK(pool->find("ALLOWED:  ") != std::string::npos);
  CHECK(pool->find("spot") != std::string::npos);
  auto steps = explain(schema(), "pipeline", false, error);
  REQUIRE(steps);
  CHECK(steps->find("TYPE:     []object\n") != std::string::npos);
  CHECK(steps->find("\n  name <string> -required-\n") != std::string::npos);
}

TEST_CASE("explain: a wrong path gets a did-you-mean and the fields there") {
  std::string error;
  CHECK_FALSE(explain(schema(), "pipeline.checkpoints.patern", false, error));
  CHECK(error.find("'pipeline.checkpoints' has no field 'patern'; did you mean 'pattern'? Its fields: ") !=
        std::string::npos);
  CHECK(error.find("resumeFlag") != std::string::npos);
  CHECK_FALSE(explain(schema(), "pipline", false, error));
  CHECK(error.find("did you mean 'pipeline'?") != std::string::npos);
  CHECK_FALSE(explain(schema(), "name.x", false, error));
  CHECK(error.find("has no fields") != std::string::npos);
  CHECK_FALSE(explain(schema(), "pipeline..name", false, error));
}

TEST_CASE("explain: a path that skips a map's key says a <name> is missing and gives the path that works") {
  std::string error;
  CHECK_FALSE(explain(schema(), "clusters.workers.resources", false, error));
  CHECK(error ==
        "'clusters.workers.resources' skips a map's key: a <name> segment is missing after 'clusters' and after "
        "'workers'; did you mean 'clusters.<name>.workers.<name>.resources'?");
  // The keys the path gives are kept; only the missing ones are put back.
  CHECK_FALSE(explain(schema(), "clusters.ray.workers.resources.limits", false, error));
  CHECK(error == "'clusters.ray.workers.resources.limits' skips a map's key: a <name> segment is missing after "
                 "'workers'; did you mean 'clusters.ray.workers.<name>.resources.limits'?");
  CHECK_FALSE(explain(schema(), "cluster.pools.accelerator.count", false, error));
  CHECK(error.find("did you mean 'cluster.pools.<name>.accelerator.count'?") != std::string::npos);
  // The path it suggests works.
  CHECK(explain(schema(), "clusters.<name>.workers.<name>.resources", false, error));
  // A typo is still a typo.
  CHECK_FALSE(explain(schema(), "cluster.pools.gpu.machin", false, error));
  CHECK(error.find("did you mean 'machine'?") != std::string::npos);
}

TEST_CASE("explain: a map's key that is a field of the map's values shows that field, not the map's value") {
  std::string error;
  auto t = explain(schema(), "cluster.pools.provisioning", false, error);
  REQUIRE_MESSAGE(t, error);
  CHECK(t->starts_with("FIELD:    cluster.pools.<name>.provisioning\nTYPE:     string\n"));
  CHECK(t->find("spot") != std::string::npos);
  CHECK(t->find("\nFIELDS:\n") == std::string::npos);
  auto labels = explain(schema(), "cluster.pools.labels", false, error);
  REQUIRE_MESSAGE(labels, error);
  CHECK(labels->starts_with("FIELD:    cluster.pools.<name>.labels\n"));
  // A key that is no field is still a key.
  auto pool = explain(schema(), "cluster.pools.gpu", false, error);
  REQUIRE_MESSAGE(pool, error);
  CHECK(pool->starts_with("FIELD:    cluster.pools.<name>\nTYPE:     object\n"));
}

TEST_CASE("explain takes data paths as diagnostics print them, and keys of plain maps") {
  std::string error;
  auto nodes = explain(schema(), "pipeline[0].nodes", false, error);
  REQUIRE_MESSAGE(nodes, error);
  CHECK(nodes->starts_with("FIELD:    pipeline.nodes\n"));
  auto label = explain(schema(), "cluster.pools.gpu.labels.team", false, error);
  REQUIRE_MESSAGE(label, error);
  CHECK(label->starts_with("FIELD:    cluster.pools.<name>.labels.<name>\nTYPE:     string\n"));
  // A summary keeps its "e.g.": the sentence goes on past it.
  auto pools = explain(schema(), "cluster.pools.gpu", false, error);
  REQUIRE(pools);
  CHECK(pools->find("e.g.\n\n") == std::string::npos);
}

TEST_CASE("explain --recursive lists the subtree, indented") {
  std::string error;
  auto t = explain(schema(), "pipeline.checkpoints", true, error);
  REQUIRE(t);
  CHECK(t->find("FIELDS:\n  path <string> -required-\n  pattern <string>\n  resumeFlag <string>\n") !=
        std::string::npos);
  auto all = explain(schema(), "", true, error);
  REQUIRE(all);
  CHECK(all->find("\n    pools <map[string]object>\n      <name> <object>\n        machine <string> -required-\n") !=
        std::string::npos);
}

namespace {
/// The DESCRIPTION of explain's text, its lines joined again.
std::string description_of(const std::string& text) {
  const size_t at = text.find("\nDESCRIPTION:\n");
  if (at == std::string::npos) return "";
  std::string out;
  for (size_t i = at + 14; i < text.size();) {
    const size_t end = std::min(text.find('\n', i), text.size());
    const std::string line = text.substr(i, end - i);
    if (line.empty()) break;
    out += (out.empty() ? "" : " ") + line.substr(line.find_first_not_of(' '));
    i = end + 1;
  }
  return out;
}

/// The words of `text`, lower case, punctuation and thousands separators dropped.
std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::string w;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? static_cast<char>(std::tolower(static_cast<unsigned char>(text[i]))) : ' ';
    const bool digit_comma = c == ',' && !w.empty() && std::isdigit(static_cast<unsigned char>(w.back())) &&
                             i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]));
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '\'' || c == '-' || c == '_') w += c;
    else if (!digit_comma && !w.empty()) out.push_back(std::exchange(w, ""));
  }
  return out;
}

/// The first run of `n` words `text` says twice (the runs not overlapping), or "".
std::string repeated_run(const std::string& text, size_t n) {
  const auto ws = words(text);
  std::map<std::vector<std::string>, size_t> first;
  for (size_t i = 0; i + n <= ws.size(); ++i) {
    std::vector<std::string> run(ws.begin() + i, ws.begin() + i + n);
    const auto [it, fresh] = first.emplace(run, i);
    if (!fresh && i >= it->second + n) return fmt::format("{}", fmt::join(run, " "));
  }
  return "";
}
}  // namespace

TEST_CASE("repeated_run finds a clause said twice, whatever its case and punctuation") {
  CHECK(repeated_run("At most 16, the most GPUs any machine carries. the most GPUs any machine carries, on x", 5) ==
        "the most gpus any machine");
  CHECK(repeated_run("At most 1,000: the most. At most 1000: the most", 5) == "at most 1000 the most");
  CHECK(repeated_run("one two three four five six seven", 5).empty());
}

TEST_CASE("explain: no field's description says the same thing twice") {
  // The reason for a maximum is added to a description that does not give it: never to one that does.
  for (const auto& p : schema_paths(schema())) {
    std::string error;
    const auto text = explain(schema(), p, false, error);
    REQUIRE_MESSAGE(text, p << ": " << error);
    const std::string desc = description_of(*text);
    const std::string run = repeated_run(desc, 5);
    CHECK_MESSAGE(run.empty(), p << " says '" << run << "' twice: " << desc);
    // The bound itself, once: "At most 16" (the RANGE line aside).
    const auto ws = words(desc);
    int bounds = 0;
    for (size_t i = 0; i + 2 < ws.size(); ++i) bounds += ws[i] == "at" && ws[i + 1] == "most" && std::isdigit(ws[i + 2][0]);
    CHECK_MESSAGE(bounds <= 1, p << " states its maximum " << bounds << " times: " << desc);
  }
}

TEST_CASE("explain: a maximum the description does not explain gets its reason, as a sentence") {
  std::string error;
  const auto port = explain(schema(), "pipeline.torchrun.port", false, error);
  REQUIRE(port);
  CHECK(description_of(*port).ends_with("default 29500. At most 65535: the largest TCP port."));
  const auto gpus = explain(schema(), "pipeline.gpus", false, error);
  REQUIRE(gpus);
  CHECK(description_of(*gpus).ends_with("carries (a2-megagpu-16g)."));
}

TEST_CASE("explain --image: the facts check judges by, as text and JSON; an unknown image says so") {
  const std::string ref = "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime";
  const auto facts = image_book().facts(ref);
  REQUIRE(facts);
  const auto j = nlohmann::json::parse(explain_image(ref, true));
  CHECK(j["known"] == true);
  CHECK(j["family"] == facts->family);
  CHECK(j["uid"] == *facts->uid);
  CHECK(j["home"] == facts->home);
  CHECK(j["cuda"] == "12.8");
  CHECK(j["tools"].get<std::set<std::string>>() == facts->tools);
  CHECK(j["lacks"].get<std::set<std::string>>() == facts->lacks);
  CHECK(j["archs"].get<std::vector<int>>() == facts->archs);
  CHECK(j["minDriver"] == facts->min_driver);
  const std::string text = explain_image(ref, false);
  CHECK(text.starts_with(ref + ": family pytorch"));
  CHECK(text.find("sm_100") != std::string::npos);
  CHECK(text.find("lacks    aws") != std::string::npos);

  const auto unknown = nlohmann::json::parse(explain_image("registry.example/team/trainer:1", true));
  CHECK(unknown["known"] == false);
  CHECK(unknown.size() == 2);
  CHECK(explain_image("registry.example/team/trainer:1", false).find("unknown") != std::string::npos);
}
