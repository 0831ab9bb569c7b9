// libFuzzer harness: the Jsonnet front end exactly as trainc runs it (jsonnet_loader.h): the
// source depth scan, evaluation in a forked child under its deadline, memory cap and output bound,
// the error-text parsing, the document limits and the key position search.
//
// Why the real child process rather than evaluating in process: libjsonnet is Debian's prebuilt
// library, so it carries no coverage counters or sanitizer checks either way; everything trainc's
// own code does with untrusted Jsonnet runs in the parent, which is instrumented; and evaluating in
// process would report std.range(0, 1e9) as a hang or an out-of-memory that the child's limits
// already turn into a clear error. The harness checks that they do: each input must end within the
// deadline with a document or an error. The cost is throughput (a fork per input).
//
// The spec sits in a fresh empty folder, so the import jail has nothing to read but the stdlib.
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#include <sanitizer/common_interface_defs.h>
#define TRAINC_FUZZ_SANITIZED 1
#endif
#endif

#include "base/diagnostics.h"
#include "frontend/jsonnet_loader.h"
#include "fuzz_file.h"

namespace {

std::string g_spec_path;

/// In the evaluation child: it must die of a signal as a release build's child does (the parent
/// turns SIGSEGV into "nested too deeply"), not run the sanitizer's or libFuzzer's crash handling,
/// which would save the parent's current input as a crash of its own.
void in_child() {
#ifdef TRAINC_FUZZ_SANITIZED
  __sanitizer_set_death_callback(nullptr);
#endif
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) ::signal(sig, SIG_DFL);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string dir = trainc_fuzz::make_temp_dir("trainc-fuzz-jsonnet");
  g_spec_path = dir + "/spec.jsonnet";
  ::pthread_atfork(nullptr, nullptr, in_child);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = std::make_shared<trainc::SourceFile>(g_spec_path, std::string(reinterpret_cast<const char*>(data), size));
  trainc::Diagnostics diags;
  diags.add_source(file);
  auto doc = trainc::load_jsonnet(file, diags);
  if (!doc && !diags.has_errors()) __builtin_trap();  // a refused spec always says why
  (void)diags.render_text();
  (void)diags.render_json();
  return 0;
}
