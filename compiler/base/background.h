#pragma once
// Work on other threads while the caller goes on: one background task (driver.h's WarmUp), and
// the workers that compile specs side by side (driver.h's compile_many). Whoever forks a child
// process first waits for the task and shuts the fork gate, so that no child starts while another
// thread is inside malloc or holds a lock the child would then wait for forever.
#include <functional>
#include <shared_mutex>

namespace trainc {

/// Runs `task` on another thread; waits first for a task started before. `task` must not throw.
void start_background(std::function<void()> task);

/// Waits until the background task, if any, has finished.
void wait_background();

/// A worker thread holds this shared for as long as it runs a piece of work; a fork holds it
/// exclusively (and calls wait_background), so it waits for the pieces under way and no new one
/// starts until the child exists. A thread that forks must not hold it shared.
std::shared_mutex& fork_gate();

}  // namespace trainc
