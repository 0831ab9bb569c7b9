#include "model/model.h"

namespace trainc {

const Pool* System::pool(const std::string& name) const {
  auto it = pools.find(name);
  return it == pools.end() ? nullptr : &it->second;
}

const Store* System::store(const std::string& name) const {
  auto it = stores.find(name);
  return it == stores.end() ? nullptr : &it->second;
}

std::string Step::kind() const {
  if (datagen) return "datagen";
  if (xgboost) return "xgboost";
  return torchrun ? "torchrun" : "command";
}

std::string System::pod_service_account() const { return identity ? identity->ksa : service_account; }

}  // namespace trainc
