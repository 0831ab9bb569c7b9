#include "base/background.h"

#include <thread>

namespace trainc {
namespace {

std::thread& background() {
  static std::thread t;
  return t;
}

}  // namespace

void start_background(std::function<void()> task) {
  wait_background();
  background() = std::thread(std::move(task));
}

void wait_background() {
  if (background().joinable()) background().join();
}

std::shared_mutex& fork_gate() {
  static std::shared_mutex gate;
  return gate;
}

}  // namespace trainc
