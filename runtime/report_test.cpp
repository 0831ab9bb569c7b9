#include "report.h"

#include <sstream>

#include <doctest/doctest.h>

namespace trainrt {

TEST_CASE("reports: one prefix naming the command, later lines indented, a level word for non-problems") {
  report_as("datagen");
  CHECK(report_text("--out is required (or --dry-run)") == "trainrt datagen: --out is required (or --dry-run)\n");
  CHECK(std::string(report_prefix()) == "trainrt datagen: ");
  CHECK(report_text("cannot use the output folder /x: denied\nCheck that the folder is writable.\n") ==
        "trainrt datagen: cannot use the output folder /x: denied\n  Check that the folder is writable.\n");
  CHECK(report_text("a\n\nb") == "trainrt datagen: a\n\n  b\n");

  report_as("train[3]");
  CHECK(report_text("cannot touch heartbeat file /h", Level::warning) == "trainrt train[3]: warning: cannot touch "
                                                                           "heartbeat file /h\n");
  std::ostringstream err;
  report(err, "this build's XGBoost has no such parameter", Level::note);
  CHECK(err.str() == "trainrt train[3]: note: this build's XGBoost has no such parameter\n");

  report_as(std::string(300, 'x'));  // cut to the buffer, still a C string
  CHECK(std::string(report_prefix()).size() == 127);
}

}  // namespace trainrt
