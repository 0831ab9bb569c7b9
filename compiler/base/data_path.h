#pragma once
// Data paths: where in the spec document a value sits. Stored as JSON pointers ("/pipeline/0/nodes"),
// shown to users as "pipeline[0].nodes".
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainc {

/// Appends an object key to a JSON pointer, escaping '~' and '/'.
std::string ptr_key(std::string_view ptr, std::string_view key);
/// Appends an array index to a JSON pointer.
std::string ptr_index(std::string_view ptr, size_t index);
/// The parent pointer ("" for the root).
std::string ptr_parent(std::string_view ptr);
/// The unescaped segments of a pointer.
std::vector<std::string> ptr_segments(std::string_view ptr);
/// "pipeline[0].nodes"; "(document)" for the root. All-digit segments print as indexes.
std::string ptr_display(std::string_view ptr);
/// A validator's context ("<root>", "[pipeline]", "[0]", as valijson reports it) as a JSON pointer
/// into `doc`, which tells array indexes from keys.
std::string context_to_ptr(const std::vector<std::string>& context, const nlohmann::json& doc);

}  // namespace trainc
