#include "base/spelling.h"

#include <doctest/doctest.h>

namespace trainc {

TEST_CASE("edit distance") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("pool", "pools") == 1);
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

}  // namespace trainc
