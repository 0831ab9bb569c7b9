#pragma once
// The entry script's first lines: what only the image can tell (its tools, a writable HOME, a
// passwd entry for the pod's uid, torch's view of the GPUs), checked before any sync or download.
// A problem found there is the image's or the spec's, which no retry fixes: the script stops at
// once with one line naming the image, what is missing and the fix, and exit code kPreflightExit.
#include <string>
#include <vector>

#include "model/failure.h"
#include "quoting/shell.h"

namespace trainc::k8s {

/// The entry script's exit code when its preflight fails (model/failure.h).
using trainc::kPreflightExit;

/// A program the script calls, why, and what to do when the image lacks it.
struct PreflightTool {
  std::string name;  ///< as the script calls it (looked up with `command -v`)
  std::string why;   ///< what the script uses it for, after "used "
  std::string fix;
};

/// What one step's entry script checks first.
struct Preflight {
  std::string image, step;
  std::vector<PreflightTool> tools;
  /// The step runs Python: its uid must have a passwd entry, or USER/LOGNAME set, for
  /// getpass.getuser() (torch, Hugging Face and vLLM call it).
  bool python = false;
  /// GPUs torch must see, with kernels for their compute capability; 0 = no GPU check.
  int torch_gpus = 0;
};

/// Writes the preflight into `sh`: checks, and on failure one line on stderr (and in the
/// container's termination message) and exit kPreflightExit.
void write_preflight(ShellScript& sh, const Preflight& p);

}  // namespace trainc::k8s
