#include "frontend/document.h"

#include "base/data_path.h"

namespace trainc {

Loc Document::loc(const std::string& ptr, Anchor anchor) const {
  std::string p = ptr;
  while (true) {
    auto it = spans.find(p);
    if (it != spans.end()) {
      if (anchor == Anchor::key && it->second.key.known()) return it->second.key;
      if (it->second.value.known()) return it->second.value;
      if (it->second.key.known()) return it->second.key;
    }
    if (p.empty()) return {};
    p = ptr_parent(p);
  }
}

void Document::error(Diagnostics& diags, const std::string& ptr, std::string message, Anchor anchor,
                     std::vector<Note> notes) const {
  diags.report({Severity::error, file ? file->name() : "", loc(ptr, anchor), ptr, std::move(message),
                std::move(notes)});
}

Note Document::note(const std::string& ptr, std::string message, Anchor anchor) const {
  return {file ? file->name() : "", loc(ptr, anchor), std::move(message)};
}

}  // namespace trainc
