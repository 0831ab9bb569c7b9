#pragma once
// Bounds on what a spec may make trainc do. Specs are untrusted input (anyone who can edit the
// repository can edit one), and what trainc makes of them runs with cloud-admin rights, so every
// front end stops at these limits with a clear error instead of recursing, allocating or running
// without end. docs/spec-v1.md ("Limits") lists them for users.
#include <cstddef>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "frontend/document.h"

namespace trainc::limits {

/// A spec file's size. The largest example is about 4 KB.
inline constexpr size_t kSpecBytes = 1 << 20;
/// Nesting of mappings and sequences (the schema's deepest path is under 10).
inline constexpr int kDepth = 64;
/// Values in the document once YAML aliases are expanded or Jsonnet is evaluated: a few
/// hundred bytes of aliases (a "billion laughs") must not become a billion values.
inline constexpr size_t kValues = 100000;
/// One string value, checked before any pattern (std::regex recurses per character).
inline constexpr size_t kStringBytes = 4096;
/// Jsonnet evaluation, which runs in a child process: wall-clock seconds, address space and the
/// size of the JSON it may produce.
inline constexpr int kJsonnetSeconds = 10;
inline constexpr size_t kJsonnetMemoryBytes = size_t{1} << 30;
inline constexpr size_t kJsonnetOutputBytes = size_t{16} << 20;
/// libjsonnet's own bound on evaluation stack frames (its default is 500).
inline constexpr int kJsonnetStackFrames = 500;
/// Brackets open at once in Jsonnet source: libjsonnet's parser recurses per bracket and overflows
/// the stack a few thousand deep.
inline constexpr int kJsonnetSourceDepth = 256;

/// Where `text` first stops being UTF-8 (an invalid, overlong or truncated sequence, a surrogate or
/// a code point past U+10FFFF); nullopt when it is UTF-8 throughout. Specs are read as UTF-8, and
/// the schema check counts characters with a decoder that indexes out of bounds on a long run of
/// continuation bytes, so the front ends refuse such text first. UTF-16 and UTF-32 text is refused
/// at its byte-order mark: diagnostics count the file's bytes, which yaml-cpp's marks would not.
std::optional<size_t> invalid_utf8(std::string_view text);

/// Where Jsonnet source first opens more than kJsonnetSourceDepth brackets ((, [, {) at once,
/// outside strings and comments; nullopt when it never does.
std::optional<size_t> jsonnet_too_deep(std::string_view source);

/// Reports values past kDepth, kValues or kStringBytes in an evaluated document (Jsonnet's output;
/// the YAML loader checks as it converts). Iterative, so a document of any depth is safe to check.
/// Returns true when within the limits.
bool check_document(const Document& doc, Diagnostics& diags);

}  // namespace trainc::limits
