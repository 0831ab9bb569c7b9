#pragma once
// The S3 stores of `trainc run --local`: a real S3-compatible server (s3rver, from npm) on a
// loopback port for the run, its data in <workdir>/s3 so that a later run finds what an earlier
// one synced out, reached with the real `aws` CLI through `--endpoint-url`.
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "model/model.h"
#include "run/process.h"

namespace trainc {

/// s3rver's access key and secret (its built-in account).
inline constexpr std::string_view kLocalS3Key = "S3RVER";

/// Where tools/install-deps.sh installs s3rver from npm: ${XDG_CACHE_HOME:-$HOME/.cache}/trainc/s3rver.
std::filesystem::path s3rver_prefix();
/// s3rver's script: `given` (--s3rver), else $TRAINC_S3RVER, else the one under s3rver_prefix();
/// "" when none exists.
std::filesystem::path find_s3rver(const std::filesystem::path& given);

class LocalS3 {
 public:
  /// Starts s3rver (its script `s3rver_js`) on a free loopback port with its data in `data`; on
  /// failure `running()` is false and `error` says why.
  LocalS3(const std::filesystem::path& s3rver_js, const std::filesystem::path& data, std::string& error);
  bool running() const { return server_ && server_->started(); }
  /// http://127.0.0.1:PORT
  const std::string& endpoint() const { return endpoint_; }
  /// What the `aws` CLI needs to reach the server: s3rver's credentials and a region.
  std::map<std::string, std::string> env(const std::string& region) const;
  /// Creates the bucket unless it exists; the exit code of `aws`.
  int ensure_bucket(const std::string& bucket);
  /// `aws s3 sync FROM TO` against the server; its exit code.
  int sync(const std::string& from, const std::string& to);
  /// Stops the server (also when dropped).
  void stop();

 private:
  std::unique_ptr<Child> server_;
  std::string endpoint_;
};

/// The s3:// address of `path` in S3 store `s` (as the model spells a store reference's url).
std::string s3_url(const Store& s, const std::string& path);

}  // namespace trainc
