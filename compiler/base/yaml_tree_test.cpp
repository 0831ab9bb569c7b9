#include "base/yaml_tree.h"

#include <doctest/doctest.h>

#include <string>

#include "base/embedded.h"

namespace trainc {
namespace {

/// Whether two trees hold the same nodes: kinds, scalars, tags, and keys in the same order.
bool same_tree(const YAML::Node& a, const YAML::Node& b, std::string& where) {
  if (a.Type() != b.Type()) return where += " (kinds differ)", false;
  if (a.IsScalar()) {
    if (a.Scalar() != b.Scalar() || a.Tag() != b.Tag())
      return where += " ('" + a.Scalar() + "' " + a.Tag() + " against '" + b.Scalar() + "' " + b.Tag() + ")", false;
    return true;
  }
  if (a.size() != b.size()) return where += " (sizes differ)", false;
  if (a.IsSequence()) {
    for (size_t i = 0; i < a.size(); ++i) {
      std::string w = where + "[" + std::to_string(i) + "]";
      if (!same_tree(a[i], b[i], w)) return where = w, false;
    }
    return true;
  }
  auto ia = a.begin(), ib = b.begin();
  for (; ia != a.end(); ++ia, ++ib) {
    std::string w = where + "." + ia->first.as<std::string>("?");
    if (!same_tree(ia->first, ib->first, w) || !same_tree(ia->second, ib->second, w)) return where = w, false;
  }
  return true;
}

}  // namespace

TEST_CASE("read_yaml_tree gives the tree YAML::Load gives, for the embedded data files and odd scalars") {
  for (const char* name : {"stdlib/catalog.yaml", "stdlib/prices.yaml", "stdlib/quotas.yaml"}) {
    CAPTURE(name);
    const EmbeddedFile* f = find_embedded(name);
    REQUIRE(f);
    std::string where;
    CHECK_MESSAGE(same_tree(YAML::Load(std::string(f->data)), read_yaml_tree(f->data), where), where);
  }
  const char* odd =
      "a: ~\nb: null\nc:\nd: 'null'\ne: \"\"\nf: [1, '2', {g: h}]\ni: |\n  block\n  text\nj: >-\n  folded\n  line\n"
      "k: !!str 12\nl: -.5\n? m\n: n\n";
  std::string where;
  CHECK_MESSAGE(same_tree(YAML::Load(odd), read_yaml_tree(odd), where), where);
  CHECK(read_yaml_tree(odd)["c"].IsNull());
  CHECK(read_yaml_tree(odd)["d"].as<std::string>() == "null");
}

TEST_CASE("read_yaml_tree refuses anchors, aliases, a second document and bad YAML, with a position") {
  CHECK_THROWS_WITH(read_yaml_tree("a: &x 1\nb: *x\n"), "an anchor at line 1, column 4");
  CHECK_THROWS_WITH(read_yaml_tree("a: 1\n---\nb: 2\n"), "a second document at line 2, column 1");
  CHECK_THROWS_AS(read_yaml_tree("a: [1\n"), std::runtime_error);
}

}  // namespace trainc
