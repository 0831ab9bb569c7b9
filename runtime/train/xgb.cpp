#include "train/xgb.h"

#include <fmt/format.h>

namespace trainrt::xgb {

void check(int rc, std::string_view what) {
  if (rc != 0) {
    std::string message = XGBGetLastError();
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    throw XgbError(fmt::format("{}: {}", what, message));
  }
}

std::string compiled_version() {
  return fmt::format("{}.{}.{}", XGBOOST_VER_MAJOR, XGBOOST_VER_MINOR, XGBOOST_VER_PATCH);
}

uint64_t DMatrix::rows() const {
  bst_ulong n = 0;
  check(XGDMatrixNumRow(h_, &n), "XGDMatrixNumRow");
  return n;
}

Booster::Booster(const std::vector<DMatrixHandle>& cache) {
  check(XGBoosterCreate(cache.data(), cache.size(), &h_), "XGBoosterCreate");
}

void Booster::set_param(const std::string& key, const std::string& value) {
  check(XGBoosterSetParam(h_, key.c_str(), value.c_str()), fmt::format("setting parameter '{}'", key));
}

void Booster::load(const std::vector<char>& ubj) {
  check(XGBoosterLoadModelFromBuffer(h_, ubj.data(), ubj.size()), "XGBoosterLoadModelFromBuffer");
}

std::vector<char> Booster::save() const {
  bst_ulong len = 0;
  const char* data = nullptr;
  check(XGBoosterSaveModelToBuffer(h_, R"({"format": "ubj"})", &len, &data), "XGBoosterSaveModelToBuffer");
  return {data, data + len};
}

int Booster::boosted_rounds() const {
  int n = 0;
  check(XGBoosterBoostedRounds(h_, &n), "XGBoosterBoostedRounds");
  return n;
}

void Booster::update(int iteration, const DMatrix& train) {
  check(XGBoosterUpdateOneIter(h_, iteration, train.get()), fmt::format("boosting round {}", iteration + 1));
}

std::string Booster::eval(int iteration, const std::vector<DMatrixHandle>& sets,
                          const std::vector<std::string>& names) {
  std::vector<const char*> cnames;
  for (const auto& n : names) cnames.push_back(n.c_str());
  const char* out = nullptr;
  // The C API takes non-const arrays it does not modify.
  check(XGBoosterEvalOneIter(h_, iteration, const_cast<DMatrixHandle*>(sets.data()), cnames.data(), sets.size(),
                             &out),
        "XGBoosterEvalOneIter");
  return out;
}

std::string model_problem(const std::vector<char>& ubj, int rounds) {
  try {
    Booster b({});
    b.load(ubj);
    const int n = b.boosted_rounds();
    if (n != rounds) return fmt::format("it holds {} rounds, its name says {}", n, rounds);
    return {};
  } catch (const XgbError& e) {
    return e.what();
  }
}

}  // namespace trainrt::xgb
