#include "emit/hcl.h"

#include <doctest/doctest.h>
#include <stdexcept>

namespace trainc::hcl {

TEST_CASE("consecutive single-line attributes align their '='") {
  Body file;
  Block& r = file.block("resource", {"google_storage_bucket", "data"});
  r.set("name", str("b"));
  r.set("uniform_bucket_level_access", boolean(true));
  r.set("force_destroy", boolean(false));
  r.comment("a comment ends the run");
  r.set("location", str("US"));
  r.set("labels", map({{"team", str("ml")}, {"cloud.google.com/pool", str("gpu")}}));
  r.set("x", number(1));
  r.set("depends_on", list({ref("google_container_cluster.main")}));
  r.block("versioning").set("enabled", boolean(true));
  r.set("after_block", number(2));
  CHECK(format(file) ==
        "resource \"google_storage_bucket\" \"data\" {\n"
        "  name                        = \"b\"\n"
        "  uniform_bucket_level_access = true\n"
        "  force_destroy               = false\n"
        "  # a comment ends the run\n"
        "  location = \"US\"\n"
        "  labels = {\n"
        "    team                    = \"ml\"\n"
        "    \"cloud.google.com/pool\" = \"gpu\"\n"
        "  }\n"
        "  x          = 1\n"
        "  depends_on = [google_container_cluster.main]\n"
        "\n"
        "  versioning {\n"
        "    enabled = true\n"
        "  }\n"
        "\n"
        "  after_block = 2\n"
        "}\n");
}

TEST_CASE("blocks are separated by blank lines; comments stay with the block they precede") {
  Body file;
  file.block("terraform").set("required_version", str(">= 1.5"));
  file.comment("why this provider");
  file.block("provider", {"google"}).set("project", ref("var.project_id"));
  Block& empty = file.block("locals");
  (void)empty;
  CHECK(format(file, "generated\nsecond line") ==
        "# generated\n"
        "# second line\n"
        "\n"
        "terraform {\n"
        "  required_version = \">= 1.5\"\n"
        "}\n"
        "\n"
        "# why this provider\n"
        "provider \"google\" {\n"
        "  project = var.project_id\n"
        "}\n"
        "\n"
        "locals {}\n");
}

TEST_CASE("string literals are escaped and never interpolated") {
  CHECK(quote("a\"b\\c\nd\te") == "\"a\\\"b\\\\c\\nd\\te\"");
  CHECK(quote("${var.x} and %{if}") == "\"$${var.x} and %%{if}\"");
  CHECK(quote("cost $5, 100%") == "\"cost $5, 100%\"");
  CHECK(quote(std::string("\x01", 1)) == "\"\\u0001\"");
}

TEST_CASE("templates interpolate references and escape literal parts") {
  Body b;
  b.set("member", templ({str("serviceAccount:${x}"), ref("google_service_account.w.email")}));
  CHECK(format(b) == "member = \"serviceAccount:$${x}${google_service_account.w.email}\"\n");
}

TEST_CASE("lists of scalars stay on one line; lists of objects and nested maps do not") {
  Body b;
  b.set("values", list({str("a"), number(2), boolean(false)}));
  b.set("empty", list({}));
  b.set("objects", list({map({{"k", str("v")}}), map({})}));
  b.set("nested", map({{"google", map({{"source", str("hashicorp/google")}, {"version", str("6.50.0")}})},
                       {"true", str("quoted keyword")}}));
  CHECK(format(b) ==
        "values = [\"a\", 2, false]\n"
        "empty  = []\n"
        "objects = [\n"
        "  {\n"
        "    k = \"v\"\n"
        "  },\n"
        "  {},\n"
        "]\n"
        "nested = {\n"
        "  google = {\n"
        "    source  = \"hashicorp/google\"\n"
        "    version = \"6.50.0\"\n"
        "  }\n"
        "  \"true\" = \"quoted keyword\"\n"
        "}\n");
}

TEST_CASE("an attribute set twice is a bug") {
  Body b;
  b.set("a", number(1));
  CHECK_THROWS_AS(b.set("a", number(2)), std::logic_error);
}

TEST_CASE("resource labels are valid identifiers") {
  CHECK(identifier("gpu-pool") == "gpu_pool");
  CHECK(identifier("8x-a100") == "_8x_a100");
  CHECK(identifier("a.b") == "a_b");
  CHECK(is_identifier(identifier("8x-a100")));
  CHECK(is_identifier("a-b"));
  CHECK_FALSE(is_identifier("1a"));
  CHECK_FALSE(is_identifier(""));
}

}  // namespace trainc::hcl
