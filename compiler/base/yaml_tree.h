#pragma once
// A yaml-cpp node tree read with libyaml, for the embedded data files (catalog, prices, quotas):
// yaml-cpp's own scanner took about 8 ms of every process to read their 67 KB, libyaml about a
// third of that. Specs are still read by yaml-cpp (frontend/yaml_loader.h), which keeps the
// source marks that diagnostics point at; this tree has none.
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string_view>
#include <vector>

namespace trainc {

/// Bounds on a tree read from text that may be hostile (an output folder a pull request changed):
/// nesting, nodes and one scalar's bytes. Anchors and aliases are refused outright, so a few hundred
/// bytes cannot expand.
struct YamlTreeLimits {
  int depth = 64;
  size_t nodes = 1'000'000;
  size_t scalar_bytes = 1 << 20;
};

/// The one document in `text` as YAML::Load would give it: plain "", "~", "null", "Null" and
/// "NULL" are null nodes, every other scalar a string node (tagged with its explicit tag, else
/// "?" when plain and "!" when quoted or a block). Throws std::runtime_error, with the line and column, for text that
/// is not YAML or that uses anchors, aliases or more than one document.
YAML::Node read_yaml_tree(std::string_view text);

/// Every document in `text` (an empty stream has none), read as read_yaml_tree reads one, within
/// `limits`. Throws std::runtime_error, with the line and column, for text that is not YAML, uses
/// anchors or aliases, or passes a limit. libyaml reads a stream of stray ',' as an error where
/// yaml-cpp's LoadAll loops for ever.
std::vector<YAML::Node> read_yaml_documents(std::string_view text, const YamlTreeLimits& limits = {});

}  // namespace trainc
