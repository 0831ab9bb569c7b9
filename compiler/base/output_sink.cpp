#include "base/output_sink.h"

#include <stdexcept>

namespace trainc {

void OutputSink::add(const std::string& path, std::string content) {
  if (!files_.emplace(path, std::move(content)).second)
    throw std::logic_error("two emitters wrote the same file: " + path);
}

std::map<std::string, std::string> OutputSink::under(std::string_view prefix) const {
  std::map<std::string, std::string> out;
  for (const auto& [path, content] : files_)
    if (std::string_view(path).substr(0, prefix.size()) == prefix) out.emplace(path, content);
  return out;
}

}  // namespace trainc
