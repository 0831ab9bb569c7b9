#pragma once
// `trainc explain PATH`: a field's type, default, allowed values and description, read from the
// embedded JSON Schema (the same one specs are validated against), the way `kubectl explain` reads
// the API's OpenAPI schema. Paths are dot-separated keys; arrays are looked through
// (`pipeline.checkpoints.pattern`) and a map's keys are any name or `<name>`
// (`cluster.pools.gpu.machine`).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainc {

/// The field at `path` ("" = the document), or nullopt with `error` saying what is wrong (with a
/// did-you-mean). `recursive` lists the whole subtree's fields instead of the direct ones.
std::optional<std::string> explain(const nlohmann::ordered_json& schema, std::string_view path, bool recursive,
                                   std::string& error);

/// The field reference in markdown (docs/reference.md): one table row per field, with what explain
/// prints of it.
std::string reference_markdown(const nlohmann::ordered_json& schema);

/// `trainc explain --image REF`: what stdlib/images.yaml says of an image reference (the family and
/// tag row it matches: user, uid, home, the uids its passwd names, tools present and known absent,
/// CUDA build, GPU kernels, oldest driver, source), as text or JSON (`known: false` when no family
/// names its repository: unknown, which the pod's preflight checks at start).
std::string explain_image(const std::string& reference, bool json);

/// Every field path the schema defines, in schema order; maps' keys appear as `<name>`.
std::vector<std::string> schema_paths(const nlohmann::ordered_json& schema);

}  // namespace trainc
