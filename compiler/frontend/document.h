#pragma once
// The document tree every front end produces: plain JSON values plus, for every JSON pointer,
// where its key and its value sit in the source.
#include <map>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/diagnostics.h"
#include "base/source.h"

namespace trainc {

struct Span {
  Loc key;    ///< the key of an object member (unknown for array items and the root)
  Loc value;  ///< the value
};

enum class Anchor { key, value };

struct Document {
  SourcePtr file;
  nlohmann::json root;
  std::map<std::string, Span> spans;  ///< JSON pointer -> positions
  /// After a schema error: the entities (a step, pool, store, cluster or service) that failed
  /// validation, which lowering and checks leave out, and every pointer an error was reported at.
  std::set<std::string> pruned, invalid;

  /// Whether a schema error was reported at `ptr` or inside it.
  bool invalid_at(const std::string& ptr) const;

  /// The best known position for `ptr`: its own, else the nearest ancestor's.
  Loc loc(const std::string& ptr, Anchor anchor = Anchor::value) const;
  /// Reports an error at `ptr`.
  void error(Diagnostics& diags, const std::string& ptr, std::string message, Anchor anchor = Anchor::value,
             std::vector<Note> notes = {}) const;
  /// Reports a warning at `ptr`: something that works but that the user should know before apply.
  void warning(Diagnostics& diags, const std::string& ptr, std::string message, Anchor anchor = Anchor::value) const;
  /// A note pointing at `ptr`, for conflicts that involve two places.
  Note note(const std::string& ptr, std::string message, Anchor anchor = Anchor::value) const;
};

/// The entity a pointer lies in: "/pipeline/3", "/cluster/pools/gpu", "/storage/data",
/// "/clusters/ray" or "/services/triton"; "" when it lies in none (a top-level setting).
std::string entity_of(std::string_view ptr);

}  // namespace trainc
