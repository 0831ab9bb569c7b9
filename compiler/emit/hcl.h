#pragma once
// Writing Terraform (HCL) deterministically, formatted as `terraform fmt` would.
#include <string>

namespace trainc {

// Implementation in hcl.cpp (owned by the Terraform emitter).

}  // namespace trainc
