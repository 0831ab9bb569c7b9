#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "formats/shard_reader.h"
#include "report.h"
#include "train/test_shards.h"

using namespace trainrt;

namespace {

void patch_bytes(const std::string& path, std::streamoff at, const void* data, size_t n) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(at);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}

std::string open_error(const std::string& path, bool verify = true) {
  try {
    MappedShard::open(path, verify);
  } catch (const ShardError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("a shard written to the format reads back in place") {
  testdata::TempDir dir;
  const auto table = testdata::make_table(1000, 7, 3);
  const auto paths = testdata::write_shards(dir.path(), table, 3, 3);
  REQUIRE(paths.size() == 3);
  CHECK(std::filesystem::path(paths[1]).filename() == "part-00001-of-00003.trs");
  CHECK(list_shard_files(dir.path()) == paths);

  auto shard = MappedShard::open(paths[1]);
  CHECK(shard.rows() == 333);
  CHECK(shard.features() == 7);
  CHECK(shard.header().first_row == 333);
  CHECK(shard.header().total_rows == 1000);
  CHECK(shard.header().shard_index == 1);
  CHECK(std::memcmp(shard.feature_data(), table.x.data() + 333 * 7, 333 * 7 * sizeof(float)) == 0);
  CHECK(std::memcmp(shard.label_data(), table.y.data() + 333, 333 * sizeof(float)) == 0);
  // released pages come back from the file unchanged
  shard.release_all();
  CHECK(shard.feature_data()[5] == table.x[333 * 7 + 5]);
  CHECK(shard.label_data()[332] == table.y[665]);
}

TEST_CASE("header validation") {
  testdata::TempDir dir;
  const auto table = testdata::make_table(100, 4, 1);
  const std::string path = dir / "part-00000-of-00001.trs";
  testdata::write_shard(path, table, 0, 100, 0, 1, 1);
  const auto size = std::filesystem::file_size(path);
  REQUIRE(size == 64 + 100 * 5 * 4);

  auto header = [&] {
    ShardHeader h;
    std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(&h), sizeof h);
    return h;
  };
  CHECK(shard_header_problem(header(), size).empty());

  SUBCASE("bad magic") {
    auto h = header();
    h.magic[0] = 'X';
    CHECK(shard_header_problem(h, size).find("bad magic") != std::string::npos);
  }
  SUBCASE("unknown version") {
    auto h = header();
    h.version = 2;
    CHECK(shard_header_problem(h, size).find("version 2") != std::string::npos);
  }
  SUBCASE("size disagrees with rows x features") {
    auto h = header();
    h.rows = 101;
    h.total_rows = 101;
    CHECK(shard_header_problem(h, size).find("needs") != std::string::npos);
    CHECK(shard_header_problem(header(), size - 4).find("needs") != std::string::npos);
  }
  SUBCASE("impossible row counts do not overflow") {
    auto h = header();
    h.rows = UINT64_MAX / 2;
    h.total_rows = UINT64_MAX;
    CHECK_FALSE(shard_header_problem(h, size).empty());
  }
  SUBCASE("shard index and row range") {
    auto h = header();
    h.shard_index = 1;
    CHECK(shard_header_problem(h, size).find("shard index") != std::string::npos);
    h = header();
    h.first_row = 50;
    CHECK(shard_header_problem(h, size).find("outside") != std::string::npos);
  }
  SUBCASE("a truncated file is reported as such") {
    std::filesystem::resize_file(path, size - 10);
    CHECK(open_error(path).find("needs") != std::string::npos);
    std::filesystem::resize_file(path, 20);
    CHECK(open_error(path).find("shorter than the 64-byte header") != std::string::npos);
  }
  SUBCASE("a missing file") { CHECK(open_error(dir / "nope.trs").find("cannot open") != std::string::npos); }
}

TEST_CASE("a corrupt payload is detected") {
  testdata::TempDir dir;
  const auto table = testdata::make_table(2000, 10, 9);
  const std::string path = dir / "part-00000-of-00001.trs";
  testdata::write_shard(path, table, 0, 2000, 0, 1, 9);
  CHECK(open_error(path).empty());

  SUBCASE("a flipped feature byte") {
    const unsigned char junk = 0x5a;
    patch_bytes(path, 64 + 12345, &junk, 1);
    const auto err = open_error(path);
    CHECK(err.find("payload checksum") != std::string::npos);
    CHECK(err.find(path) != std::string::npos);
    CHECK(open_error(path, /*verify=*/false).empty());  // header is fine; only the checksum catches it
  }
  SUBCASE("a changed label") {
    const float one = 7.0f;
    patch_bytes(path, static_cast<std::streamoff>(64 + 2000 * 10 * 4 + 4 * 100), &one, sizeof one);
    CHECK(open_error(path).find("payload checksum") != std::string::npos);
  }
}

TEST_CASE("list_shard_files takes only part-*.trs, in name order") {
  testdata::TempDir dir;
  for (const char* name : {"part-00001-of-00002.trs", "part-00000-of-00002.trs", "part-00000-of-00002.trs.tmp",
                           "part-00000-of-00002.parquet", "notes.txt"}) {
    std::ofstream(dir / name) << "x";
  }
  const auto files = list_shard_files(dir.path());
  REQUIRE(files.size() == 2);
  CHECK(files[0] == dir / "part-00000-of-00002.trs");
  CHECK(files[1] == dir / "part-00001-of-00002.trs");
  CHECK_THROWS_AS(list_shard_files(dir / "missing"), ShardError);
}

TEST_CASE("a mapped shard truncated while in use ends the process with a message naming it, not a bus error") {
  testdata::TempDir dir;
  const auto table = testdata::make_table(20000, 7, 3);
  const std::string path = dir / "part-00000-of-00001.trs";
  testdata::write_shard(path, table, 0, 20000, 0, 1, 3);
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // the child maps the shard, loses its pages to a truncation, and touches them
    ::dup2(pipe_fds[1], STDERR_FILENO);
    report_as("train");
    auto shard = MappedShard::open(path, false);
    shard.release_all();
    std::filesystem::resize_file(path, 4096);
    volatile float x = shard.label_data()[19999];
    (void)x;
    ::_exit(0);  // not reached: the touch raises SIGBUS
  }
  ::close(pipe_fds[1]);
  std::string err;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  // Reported as every trainrt problem is (report.h), though from a signal handler.
  CHECK(err.find("trainrt train: a shard became unreadable while it was being read: " + path) == 0);
}
