#include "report.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace trainrt {
namespace {

// Long enough for any subcommand name with a rank; a longer name is cut, never overrun.
char g_prefix[128] = "trainrt: ";

}  // namespace

void report_as(std::string_view command) {
  std::string prefix = "trainrt ";
  prefix.append(command);
  prefix += ": ";
  const size_t n = std::min(prefix.size(), sizeof g_prefix - 1);
  std::memcpy(g_prefix, prefix.data(), n);
  g_prefix[n] = '\0';
}

const char* report_prefix() { return g_prefix; }

std::string report_text(std::string_view message, Level level) {
  std::string out = g_prefix;
  if (level == Level::warning) out += "warning: ";
  if (level == Level::note) out += "note: ";
  while (!message.empty() && message.back() == '\n') message.remove_suffix(1);
  for (size_t start = 0;;) {
    const size_t end = message.find('\n', start);
    const std::string_view line = message.substr(start, end == std::string_view::npos ? end : end - start);
    if (start > 0 && !line.empty()) out += "  ";
    out += line;
    out += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

void report(std::string_view message, Level level) {
  const std::string text = report_text(message, level);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

void report(std::ostream& err, std::string_view message, Level level) {
  err << report_text(message, level);
  err.flush();
}

}  // namespace trainrt
