#pragma once
// Block-style YAML from JSON values. yaml-cpp's emitter leaves strings such as "true", "0755" or
// "1200" unquoted, which Kubernetes then reads as booleans and numbers; this writer quotes every
// string that YAML 1.1 or 1.2 would read as anything but that string, so output round-trips.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace trainc {

/// One YAML document; `header` lines become leading '# ' comments.
std::string to_yaml(const nlohmann::ordered_json& value, std::string_view header = {});

/// True when `s` can be written as a plain scalar and still be read back as the same string.
bool yaml_plain_safe(std::string_view s);

}  // namespace trainc
