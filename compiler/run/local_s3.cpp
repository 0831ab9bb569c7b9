#include "run/local_s3.h"

#include <cstdlib>

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace trainc {

fs::path s3rver_prefix() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  fs::path base = cache && *cache ? fs::path(cache) : fs::path(home ? home : ".") / ".cache";
  return base / "trainc" / "s3rver";
}

fs::path find_s3rver(const fs::path& given) {
  std::error_code ec;
  if (!given.empty()) return fs::exists(given, ec) ? given : fs::path();
  if (const char* env = std::getenv("TRAINC_S3RVER"); env && *env) return fs::exists(env, ec) ? fs::path(env) : fs::path();
  fs::path js = s3rver_prefix() / "node_modules" / "s3rver" / "bin" / "s3rver.js";
  return fs::exists(js, ec) ? js : fs::path();
}

LocalS3::LocalS3(const fs::path& s3rver_js, const fs::path& data, std::string& error) {
  fs::create_directories(data);
  const int port = free_port();
  std::vector<std::string> argv{"node", s3rver_js.string(), "--directory", data.string(), "--port",
                                std::to_string(port), "--address", "127.0.0.1", "--silent"};
  fmt::print("  $ {} &\n", fmt::join(argv, " "));
  std::fflush(stdout);
  server_ = std::make_unique<Child>(argv, error);
  if (!server_->started()) return;
  if (!accepts(port, 30)) {
    error = fmt::format("the S3 server ({}) did not listen on 127.0.0.1:{} within 30s", s3rver_js.string(), port);
    server_.reset();
    return;
  }
  endpoint_ = fmt::format("http://127.0.0.1:{}", port);
}

std::map<std::string, std::string> LocalS3::env(const std::string& region) const {
  // Only the server's own account: the shell's AWS config and credentials files are not read.
  return {{"AWS_ACCESS_KEY_ID", std::string(kLocalS3Key)},
          {"AWS_SECRET_ACCESS_KEY", std::string(kLocalS3Key)},
          {"AWS_CONFIG_FILE", "/dev/null"},
          {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
          {"AWS_DEFAULT_REGION", region.empty() ? "us-east-1" : region},
          {"AWS_EC2_METADATA_DISABLED", "true"}};
}

int LocalS3::ensure_bucket(const std::string& bucket) {
  std::string error;
  // Quiet: a missing bucket is the usual case on a first run.
  Child head({"sh", "-c", "exec aws --endpoint-url \"$1\" s3api head-bucket --bucket \"$2\" 2>/dev/null", "sh", endpoint_,
              bucket},
             error, env(""));
  if (head.started() && head.wait() == 0) return 0;
  return run_one({"aws", "--endpoint-url", endpoint_, "s3", "mb", "s3://" + bucket}, env(""));
}

int LocalS3::sync(const std::string& from, const std::string& to) {
  return run_one({"aws", "--endpoint-url", endpoint_, "s3", "sync", from, to, "--only-show-errors"}, env(""));
}

void LocalS3::stop() { server_.reset(); }

std::string s3_url(const Store& s, const std::string& path) {
  return fmt::format("s3://{}{}{}", s.bucket, s.prefix.empty() ? "" : "/" + s.prefix, path);
}

}  // namespace trainc
