#pragma once
// Lowering: a schema-valid document -> the typed model, with defaults applied and references
// (pools, stores, needs) resolved. Unknown references are reported with suggestions.
#include <optional>

#include "frontend/document.h"
#include "model/model.h"

namespace trainc {

/// The whole system, or nothing when any error was reported.
std::optional<System> lower(const Document& doc, Diagnostics& diags);

/// What checks can still judge after errors: the system without the entities that failed schema
/// validation or lowering and without those that refer to them; nothing when an error lies outside
/// every entity (in `gcp`, say). Without errors, the same as lower().
std::optional<System> lower_for_checks(const Document& doc, Diagnostics& diags);

}  // namespace trainc
