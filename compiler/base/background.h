#pragma once
// One task run on another thread while the caller goes on (driver.h's WarmUp). Whoever forks a
// child process waits for it first, so that no child starts while another thread is inside malloc
// or holds a lock the child would then wait for forever.
#include <functional>

namespace trainc {

/// Runs `task` on another thread; waits first for a task started before. `task` must not throw.
void start_background(std::function<void()> task);

/// Waits until the background task, if any, has finished.
void wait_background();

}  // namespace trainc
