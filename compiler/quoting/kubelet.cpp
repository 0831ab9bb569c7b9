#include "quoting/kubelet.h"

namespace trainc::k8s {

std::string literal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    if (ch == '$') out += '$';
    out += ch;
  }
  return out;
}

std::vector<std::string> literal(const std::vector<std::string>& words) {
  std::vector<std::string> out;
  out.reserve(words.size());
  for (const auto& w : words) out.push_back(literal(w));
  return out;
}

}  // namespace trainc::k8s
