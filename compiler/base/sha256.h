#pragma once
// SHA-256 through OpenSSL's EVP interface: image tags digest a build's inputs with it
// (model/build_context.cpp), and the scripts that read files beside the spec check the spec's.
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace trainc {

/// SHA-256 fed in pieces.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::string_view bytes);
  /// A length-prefixed field, so that no two different inputs feed the same bytes.
  void field(std::string_view bytes);
  /// 64 lower-case hex digits; call once.
  std::string hex();

 private:
  evp_md_ctx_st* ctx_;
};

/// The SHA-256 of `bytes` as 64 lower-case hex digits, as `sha256sum` prints it.
std::string sha256_hex(std::string_view bytes);

}  // namespace trainc
