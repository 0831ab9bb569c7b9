#pragma once
// The sandboxed evaluation server: a child process that evaluates Jsonnet specs, one at a time,
// with a memory cap, a deadline and a bound on its output per spec.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "frontend/jsonnet_vm.h"

namespace trainc::jsonnet {

/// libjsonnet lexes, parses and desugars its standard library again for every file it evaluates
/// (twice for a spec importing trainc.libsonnet), about 13 ms each in millions of small
/// allocations; its API offers no way to keep the parsed library. trainc is linked with mimalloc
/// (meson.build), which takes a third off that against glibc's allocator, and evaluates the
/// Jsonnet specs of one invocation ahead, side by side (jsonnet_prefetch.h).
///
/// A server is a child process that evaluates Jsonnet specs, one at a time, with a memory cap, a
/// deadline and a bound on its output per spec, so that a runaway spec (std.range(0, 1e9), nesting
/// that overflows libjsonnet's parser) stops with an error instead of taking trainc, or the
/// machine, with it. A spec that is stopped takes the server with it; the next spec starts a fresh
/// one.
class Server {
 public:
  ~Server() { stop(busy_); }

  bool busy() const { return busy_; }

  /// Sends a spec to evaluate, starting the server if it is not running; collect() reads the
  /// answer. The deadline runs from here. Returns the outcome at once when the spec cannot be sent.
  std::optional<Evaluation> submit(const std::string& name, const std::string& text, const std::filesystem::path& root);

  /// Waits for the answer to the spec submit() sent.
  Evaluation collect();

 private:
  std::optional<std::string> start();
  /// Ends the server (`kill`: at once) and returns its wait status.
  int stop(bool kill);
  /// The server ended in the middle of a spec: why, from how it ended.
  Evaluation ended(const std::string& what);

  pid_t pid_ = -1;
  int fd_ = -1;
  bool busy_ = false;
  std::string what_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace trainc::jsonnet
