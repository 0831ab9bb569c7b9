#pragma once
// Front end for YAML specs (yaml-cpp's parser, read in one pass of its events), keeping
// file:line:col for every key and value.
#include <optional>
#include <string>

#include "frontend/document.h"

namespace trainc {

/// Parses `file` as YAML 1.2 (core schema: quoted scalars are strings; true/false, null, numbers
/// are typed). Reports syntax errors, duplicate keys and multiple documents; nullopt on error.
std::optional<Document> load_yaml(SourcePtr file, Diagnostics& diags);

}  // namespace trainc
