#pragma once
// Validates a document against the spec's JSON Schema (valijson) and turns every error into a
// diagnostic at the offending key or value, with did-you-mean for unknown keys and enum values.
#include <string_view>

#include <nlohmann/json.hpp>

#include "frontend/document.h"

namespace trainc {

/// The embedded schema, schemas/trainc.v1.schema.json.
std::string_view spec_schema_text();

enum class SchemaVerdict {
  valid,      ///< no errors
  recovered,  ///< errors reported; the document now holds what validated (doc.pruned), to lower and check
  invalid,    ///< errors reported, some outside every entity: stop here
};

/// Parses and compiles the embedded schema now rather than at the first check_schema (see warm_up).
void load_spec_schema();

/// Reports every schema violation in `doc`. After errors it drops unknown keys and marks the entities
/// holding other errors as pruned, so that later phases can report the rest of the mistakes at once.
SchemaVerdict check_schema(Document& doc, Diagnostics& diags);

/// The subschema that governs `ptr` in `doc` (following $ref, properties, additionalProperties,
/// items), or nullptr. Exposed for tests and for lowering's key lists.
const nlohmann::json* subschema_at(const nlohmann::json& schema, const nlohmann::json& doc, std::string_view ptr);

}  // namespace trainc
