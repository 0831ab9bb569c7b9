#pragma once
// Source files and positions in them.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trainc {

/// A 1-based position; line 0 means "no position known".
struct Loc {
  int line = 0;
  int col = 0;
  int len = 1;  ///< width of the token the caret underlines
  bool known() const { return line > 0; }
  auto operator<=>(const Loc&) const = default;
};

/// A file as the user named it on the command line (never made absolute: output stays portable).
class SourceFile {
 public:
  SourceFile(std::string name, std::string text);
  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }
  /// The text of 1-based line `line`, without its newline; empty when out of range.
  std::string_view line(int line) const;
  /// The position of byte `offset` in the text.
  Loc loc_of(size_t offset) const;

 private:
  std::string name_;
  std::string text_;
  std::vector<size_t> line_starts_;
};

using SourcePtr = std::shared_ptr<const SourceFile>;

}  // namespace trainc
