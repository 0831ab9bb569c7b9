#pragma once
// Lowering: a schema-valid document -> the typed model, with defaults applied and references
// (pools, stores, needs) resolved. It reports what stops it from building the model: unknown
// references, with suggestions, and values that do not parse; settings the model can be built
// without are for the checks (checks/checks.h).
#include <optional>

#include "frontend/document.h"
#include "model/model.h"

namespace trainc {

/// The whole system, or nothing when lowering reported an error. The checks of settings
/// (checks/checks.h) are not run.
std::optional<System> lower(const Document& doc, Diagnostics& diags);

/// A check of each entity's own settings, which needs the system as lowering built it.
using LoweredCheck = void (*)(const System& sys, const Document& doc, Diagnostics& diags);

/// What checks can still judge after errors: the system without the entities that failed schema
/// validation, lowering or `check` (run first, on every entity lowered) and without those that
/// refer to them; nothing when an error lies outside every entity (in `gcp`, say). Without errors,
/// the same as lower().
std::optional<System> lower_for_checks(const Document& doc, Diagnostics& diags, LoweredCheck check = nullptr);

}  // namespace trainc
