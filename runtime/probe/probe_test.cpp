#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "probe/probe.h"

namespace trainrt {
namespace {

namespace fs = std::filesystem;
using std::chrono::minutes;
using std::chrono::seconds;
using Clock = std::chrono::system_clock;

/// A fresh folder under the temp dir, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "trainrt-probe-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name, const std::string& content = "x") const {
    std::ofstream(path / name) << content;
    return (path / name).string();
  }
};

/// The file's modification time, as the probe reads it.
Clock::time_point mtime(const std::string& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(seconds(st.st_mtim.tv_sec) +
                                                                       std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

TEST_CASE("liveness: a heartbeat younger than the max age passes, an older one fails with its age") {
  TempDir d;
  const std::string hb = d.file("heartbeat");
  const auto t = mtime(hb);

  ProbeResult fresh = check_heartbeat(hb, Millis(minutes(10)), t + seconds(30));
  CHECK(fresh.code == kOk);
  REQUIRE(fresh.lines.size() == 1);
  CHECK(fresh.lines[0] == "heartbeat '" + hb + "' is 30s old (max age 10m)");

  ProbeResult old = check_heartbeat(hb, Millis(seconds(90)), t + minutes(5));
  CHECK(old.code == kProbeFailed);
  REQUIRE(old.lines.size() == 1);
  CHECK(old.lines[0] == "heartbeat '" + hb + "' is 5m old, older than the max age 1m30s");

  CHECK(check_heartbeat(hb, Millis(seconds(90)), t + seconds(90)).code == kOk);  // the limit itself is fine
}

TEST_CASE("liveness: a heartbeat from the future counts as fresh; a missing one fails") {
  TempDir d;
  const std::string hb = d.file("heartbeat");
  CHECK(check_heartbeat(hb, Millis(seconds(1)), mtime(hb) - minutes(3)).code == kOk);

  ProbeResult missing = check_heartbeat((d.path / "nope").string(), Millis(seconds(60)));
  CHECK(missing.code == kProbeFailed);
  REQUIRE(missing.lines.size() == 1);
  CHECK(missing.lines[0] == "heartbeat '" + (d.path / "nope").string() + "' does not exist (max age 1m)");
}

TEST_CASE("readiness: files and listable directories pass; every problem gets its own line") {
  TempDir d;
  const std::string f = d.file("data.bin");
  fs::create_directory(d.path / "shards");
  const std::string dir = (d.path / "shards").string();

  ProbeResult ok = check_ready({f, dir});
  CHECK(ok.code == kOk);
  CHECK(ok.lines == std::vector<std::string>{"ready: all 2 paths are readable"});

  const std::string gone = (d.path / "gone").string();
  const std::string gone2 = (d.path / "gone2").string();
  ProbeResult bad = check_ready({f, gone, dir, gone2});
  CHECK(bad.code == kProbeFailed);
  CHECK(bad.lines == std::vector<std::string>{"not ready: '" + gone + "' does not exist",
                                              "not ready: '" + gone2 + "' does not exist"});
}

TEST_CASE("readiness: unreadable files and unlistable directories fail (when not root)") {
  if (::geteuid() == 0) return;  // root reads everything; the permission bits prove nothing
  TempDir d;
  const std::string f = d.file("secret");
  fs::permissions(f, fs::perms::none);
  fs::create_directory(d.path / "locked");
  fs::permissions(d.path / "locked", fs::perms::owner_write);
  ProbeResult r = check_ready({f, (d.path / "locked").string()});
  CHECK(r.code == kProbeFailed);
  CHECK(r.lines.size() == 2);
  fs::permissions(d.path / "locked", fs::perms::owner_all);
}

}  // namespace
}  // namespace trainrt
