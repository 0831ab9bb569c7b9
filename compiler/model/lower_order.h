#pragma once
// What lowering does with the whole system once its entities are translated: the steps in the
// order their needs allow, and, for the checks, the system without the entities that had errors.
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/data_path.h"
#include "frontend/document.h"
#include "model/model.h"

namespace trainc {

/// Kahn's algorithm, taking ready steps in spec order; reports one error per cycle found.
std::vector<Step> dependency_order(std::vector<Step> steps, const Document& doc, Diagnostics& diags);

/// Leaves out of `sys` the entities at the pointers in `out`, and, until nothing changes, every
/// entity that refers to one left out (a step on a pool, a cluster's workers, a step's needs).
void leave_out(System& sys, std::set<std::string> out, const nlohmann::json& root);

}  // namespace trainc
