#pragma once
// A thin RAII layer over XGBoost's C API: handles that free themselves, and calls that throw
// XgbError (with XGBGetLastError's text) instead of returning -1.
#include <xgboost/c_api.h>
#include <xgboost/version_config.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainrt::xgb {

/// An XGBoost call failed; what() names the call and carries XGBoost's own message.
struct XgbError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws XgbError when `rc` is not 0.
void check(int rc, std::string_view what);

/// "1.7.4": the XGBoost trainrt was compiled against.
std::string compiled_version();

/// An owned DMatrixHandle.
class DMatrix {
 public:
  DMatrix() = default;
  explicit DMatrix(DMatrixHandle h) : h_(h) {}
  DMatrix(DMatrix&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  DMatrix& operator=(DMatrix&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~DMatrix() {
    if (h_ != nullptr) XGDMatrixFree(h_);
  }
  DMatrixHandle get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }
  uint64_t rows() const;

 private:
  DMatrixHandle h_ = nullptr;
};

/// An owned BoosterHandle.
class Booster {
 public:
  /// A booster caching predictions for `cache` (the training matrix first).
  explicit Booster(const std::vector<DMatrixHandle>& cache);
  Booster(Booster&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Booster& operator=(Booster&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  ~Booster() {
    if (h_ != nullptr) XGBoosterFree(h_);
  }
  BoosterHandle get() const { return h_; }

  void set_param(const std::string& key, const std::string& value);
  void load(const std::vector<char>& ubj);
  /// The model as UBJSON bytes (what model.ubj and the checkpoints hold).
  std::vector<char> save() const;
  int boosted_rounds() const;
  void update(int iteration, const DMatrix& train);
  /// XGBoost's evaluation line, "[3]\ttrain-logloss:0.12\teval-logloss:0.15".
  std::string eval(int iteration, const std::vector<DMatrixHandle>& sets, const std::vector<std::string>& names);

 private:
  BoosterHandle h_ = nullptr;
};

/// Why UBJ bytes are not a loadable model of `rounds` boosting rounds; empty when they are.
std::string model_problem(const std::vector<char>& ubj, int rounds);

}  // namespace trainrt::xgb
