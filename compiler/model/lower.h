#pragma once
// Lowering: a schema-valid document -> the typed model, with defaults applied and references
// (pools, stores, needs) resolved. Unknown references are reported with suggestions.
#include <optional>

#include "frontend/document.h"
#include "model/model.h"

namespace trainc {

std::optional<System> lower(const Document& doc, Diagnostics& diags);

}  // namespace trainc
