#include "quoting/shell.h"

#include <algorithm>

namespace trainc {

std::string sh_quote(std::string_view s) {
  auto safe = [](unsigned char c) {
    return std::isalnum(c) || std::string_view("_-./:=@%+,").find(static_cast<char>(c)) != std::string_view::npos;
  };
  if (!s.empty() && std::all_of(s.begin(), s.end(), safe)) return std::string(s);
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string sh_join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + sh_quote(w);
  return out;
}

namespace {

/// The word the first shell must produce for `word` so that list2cmdline, then `sh -c`, give back
/// `word`. list2cmdline leaves a word without space or tab bare (but writes `"` as `\"`, doubling
/// the backslashes before it), and wraps any other word in double quotes (also doubling trailing
/// backslashes).
std::string twice_quoted_word(std::string_view word) {
  if (word.empty()) return "";
  if (sh_quote(word) == word) return std::string(word);  // nothing either shell or list2cmdline reads
  std::string out;
  if (word.find_first_of(" \t") == std::string_view::npos) {
    // Bare for list2cmdline, so single-quoted for sh; a `"` goes between the quotes, where
    // list2cmdline's `\"` is an escaped quote to sh.
    out = "'";
    for (char ch : word) {
      if (ch == '\'') out += "'\\''";
      else if (ch == '"') out += "'\"'";
      else out += ch;
    }
    return out + "'";
  }
  // Wrapped in double quotes by list2cmdline: what sh's double quotes expand is escaped. A run of
  // backslashes before a `"` or at the end is doubled by list2cmdline itself; any other run is
  // doubled here.
  for (size_t i = 0; i < word.size();) {
    if (word[i] == '\\') {
      size_t n = 0;
      while (i + n < word.size() && word[i + n] == '\\') ++n;
      const bool doubled_later = i + n == word.size() || word[i + n] == '"';
      out.append(doubled_later ? n : 2 * n, '\\');
      i += n;
      continue;
    }
    if (word[i] == '$' || word[i] == '`') out += '\\';
    out += word[i++];
  }
  return out;
}

}  // namespace

std::string sh_join_twice(const std::vector<std::string>& words) {
  std::vector<std::string> first;
  first.reserve(words.size());
  for (const auto& w : words) first.push_back(twice_quoted_word(w));
  return sh_join(first);
}

ShellScript& ShellScript::line(std::string_view text) {
  if (!text.empty()) text_ += std::string(depth_ * 2, ' ');
  text_ += text;
  text_ += '\n';
  return *this;
}

ShellScript& ShellScript::comment(std::string_view text) { return line("# " + std::string(text)); }

ShellScript& ShellScript::open(std::string_view header) {
  line(header);
  ++depth_;
  return *this;
}

ShellScript& ShellScript::close(std::string_view footer) {
  --depth_;
  return line(footer);
}

ShellScript& ShellScript::branch(std::string_view text) {
  --depth_;
  line(text);
  ++depth_;
  return *this;
}

}  // namespace trainc
