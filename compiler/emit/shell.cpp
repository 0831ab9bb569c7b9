#include "emit/shell.h"

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
