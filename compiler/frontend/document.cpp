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

void Document::warning(Diagnostics& diags, const std::string& ptr, std::string message, Anchor anchor) const {
  diags.report({Severity::warning, file ? file->name() : "", loc(ptr, anchor), ptr, std::move(message), {}});
}

bool Document::invalid_at(const std::string& ptr) const {
  auto it = invalid.lower_bound(ptr);
  return it != invalid.end() && (*it == ptr || it->starts_with(ptr + "/"));
}

std::string entity_of(std::string_view ptr) {
  const auto segs = ptr_segments(ptr);
  if (segs.size() >= 2 && (segs[0] == "pipeline" || segs[0] == "storage" || segs[0] == "clusters" ||
                           segs[0] == "services"))
    return ptr_key(ptr_key("", segs[0]), segs[1]);
  if (segs.size() >= 3 && segs[0] == "cluster" && segs[1] == "pools")
    return ptr_key(ptr_key(ptr_key("", segs[0]), segs[1]), segs[2]);
  return "";
}

Note Document::note(const std::string& ptr, std::string message, Anchor anchor) const {
  return {file ? file->name() : "", loc(ptr, anchor), std::move(message)};
}

}  // namespace trainc
