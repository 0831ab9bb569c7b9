#pragma once
// Diagnostics: collected (never thrown), sorted, de-duplicated, rendered as text, JSON or GitHub
// Actions workflow commands.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/source.h"

namespace trainc {

enum class Severity { error, warning };

/// A secondary position that contributed to a diagnostic ("first defined here").
struct Note {
  std::string file;
  Loc loc;
  std::string message;
};

struct Diagnostic {
  Severity severity = Severity::error;
  std::string file;     ///< as named on the command line; "" when no file applies
  Loc loc;
  std::string path;     ///< JSON pointer into the spec document; "" for none
  std::string message;  ///< lower case, specific, says what to do
  std::vector<Note> notes;
};

class Diagnostics {
 public:
  /// Registers a file so rendering can quote its lines.
  void add_source(SourcePtr file);
  void report(Diagnostic d);
  /// Takes in everything `other` reported, after what this one holds, and its sources.
  void append(const Diagnostics& other);
  bool has_errors() const;
  size_t error_count() const;
  /// Everything reported so far, in the order it was reported (not de-duplicated).
  const std::vector<Diagnostic>& reported() const { return items_; }
  /// Whether an error was reported after the first `from` diagnostics (reported().size() earlier).
  bool has_errors_since(size_t from) const;
  /// Sorted by file, line, column, message; exact duplicates removed.
  std::vector<Diagnostic> sorted() const;
  /// The text form: "file:line:col: error: message", the source line, a caret, the data path, notes.
  std::string render_text() const;
  /// A JSON array of {severity, file, line, column, path, message, notes}.
  std::string render_json() const;
  /// One GitHub Actions workflow command per diagnostic ("::error file=F,line=L,col=C,title=trainc::
  /// message"), the data path and notes in the message.
  std::string render_github() const;

 private:
  std::string quote_line(const std::string& file, const Loc& loc) const;
  std::vector<Diagnostic> items_;
  std::map<std::string, SourcePtr> sources_;
};

/// GitHub Actions workflow-command escaping: a command's message (% CR LF) and a property's value
/// (also ':' and ',').
std::string github_escape_data(std::string_view s);
std::string github_escape_property(std::string_view s);

/// One workflow command: `::LEVEL file=F,line=L,col=C,title=T::message`; empty properties and
/// line/col 0 are left out.
std::string github_command(std::string_view level, std::string_view file, int line, int col, std::string_view title,
                           std::string_view message);

}  // namespace trainc
