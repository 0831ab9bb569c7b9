#pragma once
// Writing POSIX/bash scripts: quoting, and a builder that keeps indentation consistent.
#include <string>
#include <string_view>
#include <vector>

namespace trainc {

/// `s` as one shell word: bare when it holds only safe characters, else single-quoted.
std::string sh_quote(std::string_view s);
/// Words joined by spaces, each quoted.
std::string sh_join(const std::vector<std::string>& words);
/// `words` as a command line that passes through two shells and arrives whole: the first shell
/// (bash) splits it into words; the program they reach joins them with Python's
/// subprocess.list2cmdline and hands that to a second shell (`sh -c`). This is how a RayJob's
/// entrypoint runs: KubeRay's submitter pastes it into `bash -c "ray job submit … -- ENTRYPOINT"`,
/// and Ray's job supervisor runs list2cmdline of those words with shell=True.
std::string sh_join_twice(const std::vector<std::string>& words);

class ShellScript {
 public:
  /// Appends a line at the current indentation (an empty string gives a blank line).
  ShellScript& line(std::string_view text = {});
  ShellScript& comment(std::string_view text);
  /// Opens a block: writes `header` and indents what follows until close().
  ShellScript& open(std::string_view header);
  ShellScript& close(std::string_view footer);
  /// Writes `text` (else, elif ...) one level out, between two indented parts of a block.
  ShellScript& branch(std::string_view text);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  int depth_ = 0;
};

}  // namespace trainc
