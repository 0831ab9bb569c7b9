#include "inspect/explain.h"

#include <doctest/doctest.h>

#include "frontend/schema_check.h"

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
