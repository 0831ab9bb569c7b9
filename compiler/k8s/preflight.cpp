#include "k8s/preflight.h"

#include <fmt/format.h>

namespace trainc::k8s {
namespace {

/// torch's view of the pod's GPUs, run as `python3 -c PROGRAM WANT`: exit 0 when it sees at least
/// WANT GPUs and has kernels for each one's compute capability, 3 (and why on stdout) when
/// python3 does not import torch, else 1 with the problem as one line. Kernels run on a GPU when
/// built for it as a cubin of the same major version and a minor version not above the GPU's
/// (sm_80 runs on sm_86; an arch-specific sm_90a only on sm_90), or as PTX not above it, which the
/// driver compiles for a newer GPU (CUDA C++ Programming Guide, "Binary Compatibility" and "PTX
/// Compatibility"). No apostrophes: the program is one single-quoted shell word.
constexpr const char* kGpuCheck = R"PY(import re, sys
try:
    import torch
except Exception as e:
    print(f"python3 does not import torch ({type(e).__name__})")
    sys.exit(3)
want = int(sys.argv[1])
build = f"torch {torch.__version__} " + (f"(CUDA {torch.version.cuda})" if torch.version.cuda else "(a CPU-only build)")
def runs(arch, major, cc):
    m = re.fullmatch(r"(sm|compute)_(\d+)([af]?)", arch)
    if not m:
        return False
    v = int(m.group(2))
    if m.group(3) == "a":
        return v == cc
    if m.group(1) == "compute":
        return v <= cc
    return v // 10 == major and v <= cc
try:
    seen = torch.cuda.device_count()
    if seen < want:
        fix = ("use an image whose torch is a CUDA build" if not torch.version.cuda else
               f"the NVIDIA driver on the node must run CUDA {torch.version.cuda} (pin a newer driver or use an image built for an older CUDA)")
        print(f"{build} sees {seen} of the {want} GPU(s) the pod was given: {fix}")
        sys.exit(1)
    archs = torch.cuda.get_arch_list()
    built = " ".join(archs) or "no GPU"
    for i in range(seen):
        major, minor = torch.cuda.get_device_capability(i)
        cc = 10 * major + minor
        if not any(runs(a, major, cc) for a in archs):
            print(f"{build} has no kernels for GPU {i} ({torch.cuda.get_device_name(i)}, sm_{cc}); it is built for "
                  f"{built}: use an image whose torch is built for sm_{cc}")
            sys.exit(1)
except Exception as e:
    print(f"{build} cannot use the GPUs: {type(e).__name__}: {e}".splitlines()[0])
    sys.exit(1)
)PY";

}  // namespace

void write_preflight(ShellScript& sh, const Preflight& p) {
  sh.comment("Preflight: what only the image can tell, checked before anything is synced or downloaded. A");
  sh.comment("problem found here is the image's or the spec's and no retry fixes it: one line on stderr (and in");
  sh.comment(fmt::format("the container's termination message), exit {} (EX_CONFIG). Coreutils (date, tee, mkdir, sort,", kPreflightExit));
  sh.comment("...) come with any image whose bash runs this script, and are not checked.");
  sh.line(fmt::format("PREFLIGHT_IMAGE={}", sh_quote(p.image)));
  sh.open("if [ -n \"${TRAINC_LOCAL:-}\" ]; then")
      .line("PREFLIGHT_WHERE=\"this machine (standing in for image '$PREFLIGHT_IMAGE' under trainc run --local)\"")
      .branch("else")
      .line("PREFLIGHT_WHERE=\"image '$PREFLIGHT_IMAGE'\"")
      .close("fi");
  sh.line("PREFLIGHT_PROBLEMS=()");
  sh.open("preflight_tool() {")
      .line("command -v \"$1\" >/dev/null 2>&1 || PREFLIGHT_PROBLEMS+=(\"no '$1' on PATH (used $2): $3\")")
      .close("}");
  sh.open("preflight_done() {")
      .line("[ \"${#PREFLIGHT_PROBLEMS[@]}\" -eq 0 ] && return 0")
      // A step's name is a DNS label: nothing to quote.
      .line(fmt::format("local line=\"trainc preflight: $PREFLIGHT_WHERE cannot run step '{}'\" sep=': ' p", p.step))
      .line("for p in \"${PREFLIGHT_PROBLEMS[@]}\"; do line+=\"$sep$p\"; sep='; '; done")
      .line("printf '%s\\n' \"$line\" >&2")
      .line("if [ -z \"${TRAINC_LOCAL:-}\" ] && [ -w /dev/termination-log ]; then printf '%s\\n' \"$line\" >/dev/termination-log; fi")
      .line(fmt::format("exit {}", kPreflightExit))
      .close("}");
  for (const auto& t : p.tools)
    sh.line(fmt::format("preflight_tool {} {} {}", sh_quote(t.name), sh_quote(t.why), sh_quote(t.fix)));

  sh.open("if [ -z \"${HOME:-}\" ]; then")
      .line("PREFLIGHT_PROBLEMS+=('HOME is not set: set env HOME on the step to a folder its user can write (e.g. /tmp)')")
      .branch("elif ! { : >\"$HOME/.trainc-preflight.$$\"; } 2>/dev/null; then")
      .line("PREFLIGHT_PROBLEMS+=(\"HOME ($HOME) is not writable by uid $(id -u), yet caches go there: \"'set env HOME on "
            "the step (e.g. /tmp), or use an image whose user owns its home')")
      .branch("else")
      .line("rm -f \"$HOME/.trainc-preflight.$$\"")
      .close("fi");

  if (p.python) {
    sh.comment("Python's getpass.getuser() (torch, Hugging Face and vLLM call it) reads LOGNAME or USER, else");
    sh.comment("the passwd entry of the uid; without either it raises KeyError: 'getpwuid(): uid not found'.");
    sh.open("preflight_uid_known() {")
        .line("if command -v getent >/dev/null 2>&1; then getent passwd \"$1\" >/dev/null 2>&1; return; fi")
        .line("local id")
        .line("while IFS=: read -r _ _ id _; do [ \"$id\" = \"$1\" ] && return 0; done 2>/dev/null </etc/passwd")
        .line("return 1")
        .close("}");
    sh.line("PREFLIGHT_UID=$(id -u)");
    sh.open("if [ -z \"${USER:-}\" ] && [ -z \"${LOGNAME:-}\" ] && ! preflight_uid_known \"$PREFLIGHT_UID\"; then")
        .line("PREFLIGHT_PROBLEMS+=(\"uid $PREFLIGHT_UID has no passwd entry and neither USER nor LOGNAME is set "
              "(getpass raises KeyError): set env USER and LOGNAME, or run as a user the image names\")")
        .close("fi");
  }
  sh.line("preflight_done");

  if (p.torch_gpus > 0) {
    sh.comment(fmt::format("torch must see the pod's {} GPU(s) and have kernels for them (an image built before the GPU", p.torch_gpus));
    sh.comment("has none). Under trainc run --local the step runs on the CPU: nothing to check.");
    sh.line(fmt::format("PREFLIGHT_GPU_CHECK={}", sh_quote(kGpuCheck)));
    sh.open("if [ -z \"${TRAINC_LOCAL:-}\" ] && command -v python3 >/dev/null 2>&1; then")
        .line("preflight_status=0")
        .line(fmt::format("preflight_gpus=$(python3 -c \"$PREFLIGHT_GPU_CHECK\" {}) || preflight_status=$?", p.torch_gpus))
        .open("case \"$preflight_status\" in")
        .line("0) ;;")
        .line("3) printf '[trainc] preflight: %s; the GPU check is skipped\\n' \"$preflight_gpus\" ;;")
        .line("*) PREFLIGHT_PROBLEMS+=(\"${preflight_gpus:-python3 failed checking the GPUs (status $preflight_status)}\") ;;")
        .close("esac")
        .line("preflight_done")
        .close("fi");
  }
}

}  // namespace trainc::k8s
