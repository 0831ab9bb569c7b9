#pragma once
// A yaml-cpp node tree read with libyaml, for the embedded data files (catalog, prices, quotas):
// yaml-cpp's own scanner took about 8 ms of every process to read their 67 KB, libyaml about a
// third of that. Specs are still read by yaml-cpp (frontend/yaml_loader.h), which keeps the
// source marks that diagnostics point at; this tree has none.
#include <yaml-cpp/yaml.h>

#include <string_view>

namespace trainc {

/// The one document in `text` as YAML::Load would give it: plain "", "~", "null", "Null" and
/// "NULL" are null nodes, every other scalar a string node (tagged with its explicit tag, else
/// "?" when plain and "!" when quoted or a block). Throws std::runtime_error, with the line and column, for text that
/// is not YAML or that uses anchors, aliases or more than one document.
YAML::Node read_yaml_tree(std::string_view text);

}  // namespace trainc
