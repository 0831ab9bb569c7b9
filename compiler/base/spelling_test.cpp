#include "base/spelling.h"

#include <doctest/doctest.h>

namespace trainc {

TEST_CASE("edit distance") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("pool", "pools") == 1);
  CHECK(edit_distance("rya", "ray") == 1);  // a swap of neighbours is one edit
}

TEST_CASE("suggestions stay within three edits") {
  std::vector<std::string> keys{"imagePullPolicy", "image", "nodes", "needs", "procsPerNode"};
  CHECK(suggest("imagePulPolicy", keys) == "imagePullPolicy");
  CHECK(suggest("procsPerNod", keys) == "procsPerNode");
  CHECK(suggest("ImagePullPolicy", keys) == "imagePullPolicy");
  CHECK_FALSE(suggest("completelyDifferent", keys).has_value());
  CHECK(did_you_mean("nodez", keys) == "; did you mean 'nodes'?");
  CHECK(did_you_mean("zzzzzzzz", keys).empty());
}

TEST_CASE("long names allow a third of their length") {
  std::vector<std::string> accelerators{"nvidia-l4", "nvidia-tesla-t4", "nvidia-b200", "nvidia-h100-80gb"};
  CHECK(suggest("nvidia-l4-gpu", accelerators) == "nvidia-l4");
  CHECK(suggest("nvidia-tesla-t4-gpu", accelerators) == "nvidia-tesla-t4");
  CHECK_FALSE(suggest("amd-mi300x", accelerators).has_value());
  CHECK_FALSE(suggest("wat", {"plan", "run", "check"}).has_value());  // short names: one edit
  CHECK(suggest("chek", {"plan", "run", "check"}) == "check");
}

}  // namespace trainc
