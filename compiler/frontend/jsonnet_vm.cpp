#include "frontend/jsonnet_vm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string_view>

extern "C" {
#include <libjsonnet.h>
}

#include "base/embedded.h"
#include "frontend/limits.h"

namespace fs = std::filesystem;

namespace trainc::jsonnet {
namespace {

constexpr std::string_view kStdlibPrefix = "<trainc-stdlib>/";

struct ImportJail {
  fs::path root;  ///< canonical folder of the spec
  JsonnetVm* vm = nullptr;
};

char* copy_to_vm(JsonnetVm* vm, std::string_view s) {
  char* buf = jsonnet_realloc(vm, nullptr, s.size() + 1);
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  return buf;
}

bool inside(const fs::path& root, const fs::path& p) {
  auto r = root.begin(), e = root.end();
  auto q = p.begin();
  for (; r != e; ++r, ++q)
    if (q == p.end() || *q != *r) return false;
  return true;
}

char* import_callback(void* ctx, const char* base, const char* rel, char** found_here, int* success) {
  auto* jail = static_cast<ImportJail*>(ctx);
  *success = 0;
  const std::string_view rel_sv(rel), base_sv(base);
  const bool bare = rel_sv.find('/') == std::string_view::npos;
  const bool from_stdlib = base_sv.rfind(kStdlibPrefix, 0) == 0;
  // The embedded stdlib answers bare names ('trainc.libsonnet') unless a file of that name sits
  // beside the importing file, and every import made from inside the stdlib.
  if (bare || from_stdlib) {
    std::error_code ec;
    const auto* f = find_embedded(fmt::format("stdlib/{}", rel_sv));
    const bool shadowed = !from_stdlib && fs::exists(fs::path(base) / rel_sv, ec);
    if (f && !shadowed) {
      *found_here = copy_to_vm(jail->vm, fmt::format("{}{}", kStdlibPrefix, rel_sv));
      *success = 1;
      return copy_to_vm(jail->vm, f->data);
    }
  }
  std::error_code ec;
  fs::path p = fs::path(rel_sv).is_absolute() ? fs::path(rel_sv) : fs::path(base) / rel_sv;
  fs::path canon = fs::weakly_canonical(p, ec);
  if (from_stdlib || ec || !inside(jail->root, canon)) {
    return copy_to_vm(jail->vm, fmt::format("import '{}' is outside the spec's folder; a spec may import files "
                                            "in its own folder (or below it) and the trainc stdlib",
                                            rel_sv));
  }
  std::ifstream in(canon, std::ios::binary);
  if (!in) return copy_to_vm(jail->vm, fmt::format("cannot read import '{}'", rel_sv));
  std::ostringstream ss;
  ss << in.rdbuf();
  *found_here = copy_to_vm(jail->vm, p.lexically_normal().string());
  *success = 1;
  return copy_to_vm(jail->vm, ss.str());
}

}  // namespace

Evaluation evaluate_here(const std::string& name, const std::string& text, const fs::path& root) {
  ImportJail jail;
  jail.root = root;
  JsonnetVm* vm = jsonnet_make();
  jail.vm = vm;
  jsonnet_import_callback(vm, import_callback, &jail);
  jsonnet_max_trace(vm, 4);
  jsonnet_max_stack(vm, limits::kJsonnetStackFrames);
  int error = 0;
  char* out = jsonnet_evaluate_snippet(vm, name.c_str(), text.c_str(), &error);
  Evaluation e{error ? Evaluation::Outcome::jsonnet_error : Evaluation::Outcome::json, out ? out : ""};
  jsonnet_realloc(vm, out, 0);
  jsonnet_destroy(vm);
  return e;
}

void report_error(const SourceFile& file, const std::string& raw, Diagnostics& diags) {
  // "RUNTIME ERROR: msg\n\tspec.jsonnet:3:5-10\t..." or "STATIC ERROR: spec.jsonnet:1:2: msg"
  static const std::regex static_re("^STATIC ERROR: (.*?):([0-9]+):([0-9]+)(-[0-9:()-]+)?: (.*)");
  static const std::regex loc_re("\\t(.*?):\\(?([0-9]+):([0-9]+)");
  std::string first_line = raw.substr(0, raw.find('\n'));
  std::smatch m;
  std::string file_name = file.name();
  Loc loc;
  std::string message;
  if (std::regex_search(first_line, m, static_re)) {
    file_name = m[1];
    loc = Loc{std::stoi(m[2]), std::stoi(m[3]), 1};
    message = "Jsonnet syntax error: " + m[5].str();
  } else {
    message = first_line;
    if (message.rfind("RUNTIME ERROR: ", 0) == 0) message = "Jsonnet error: " + message.substr(15);
    // The first frame in a file trainc can quote; frames in the stdlib fall through to the spec.
    std::string rest = raw.substr(std::min(raw.size(), first_line.size()));
    for (std::sregex_iterator it(rest.begin(), rest.end(), loc_re), end; it != end; ++it) {
      std::string f = (*it)[1];
      if (f.rfind(kStdlibPrefix, 0) == 0) continue;
      file_name = f;
      loc = Loc{std::stoi((*it)[2]), std::stoi((*it)[3]), 1};
      break;
    }
  }
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  diags.report({Severity::error, file_name, loc, "", message, {}});
}

}  // namespace trainc::jsonnet
