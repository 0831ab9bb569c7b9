#pragma once
// Validates a document against the spec's JSON Schema (valijson) and turns every error into a
// diagnostic at the offending key or value, with did-you-mean for unknown keys and enum values.
#include <string_view>

#include <nlohmann/json.hpp>

#include "frontend/document.h"

namespace trainc {

/// The embedded schema, schemas/trainc.v1.schema.json.
std::string_view spec_schema_text();

/// Reports every schema violation in `doc`; returns true when there are none.
bool check_schema(const Document& doc, Diagnostics& diags);

/// The subschema that governs `ptr` in `doc` (following $ref, properties, additionalProperties,
/// items), or nullptr. Exposed for tests and for lowering's key lists.
const nlohmann::json* subschema_at(const nlohmann::json& schema, const nlohmann::json& doc, std::string_view ptr);

}  // namespace trainc
