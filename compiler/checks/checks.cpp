#include "checks/checks.h"

namespace trainc {

bool run_checks(const System& sys, const Document& doc, Diagnostics& diags, const CheckOptions& opts) {
  size_t before = diags.error_count();
  check_pools(sys, doc, diags);
  check_names(sys, doc, diags);
  check_steps(sys, doc, diags);
  check_clusters(sys, doc, diags);
  check_services(sys, doc, diags);
  check_resources(sys, doc, diags);
  check_security(sys, doc, diags);
  check_secrets(sys, doc, diags, opts);
  return diags.error_count() == before;
}

}  // namespace trainc
