#include "frontend/jsonnet_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/jsonnet_positions.h"
#include "frontend/jsonnet_prefetch.h"
#include "frontend/jsonnet_vm.h"
#include "frontend/limits.h"

namespace trainc {
namespace {

using jsonnet::Evaluation;
using jsonnet::Request;

/// Evaluates `file`. The last evaluation is kept: with --skip-non-specs every Jsonnet spec is
/// evaluated to tell whether it is a trainc spec (spec_detect.cpp) and then again to compile it,
/// and evaluating is most of what a Jsonnet spec costs. Jsonnet is hermetic but for its imports,
/// which cannot change between the two calls of one invocation. A stopped evaluation is not kept:
/// it may have been the machine's load.
Evaluation evaluate(const SourceFile& file) {
  static std::optional<std::pair<Request, Evaluation>> last;
  Request r = jsonnet::request_for(file);
  if (last && last->first == r) return last->second;
  Evaluation e = jsonnet::evaluate(r);
  if (e.outcome == Evaluation::Outcome::stopped)
    last.reset();
  else
    last.emplace(std::move(r), e);
  return e;
}

/// Where `file` cannot be evaluated, and why, before libjsonnet sees it; nullopt when it can.
std::optional<std::pair<size_t, std::string>> not_evaluable(const SourceFile& file) {
  if (auto at = limits::invalid_utf8(file.text()))
    return std::pair{*at, fmt::format("byte 0x{:02X} is not valid UTF-8; trainc reads specs written in UTF-8",
                                      static_cast<unsigned char>(file.text()[*at]))};
  if (auto at = limits::jsonnet_too_deep(file.text()))
    return std::pair{*at,
                     fmt::format("more than {} brackets open at once; trainc reads Jsonnet nested at most that deep",
                                 limits::kJsonnetSourceDepth)};
  return std::nullopt;
}

}  // namespace

void expect_jsonnet(const std::vector<SourcePtr>& files) {
  std::vector<Request> requests;
  for (const auto& f : files) {
    if (not_evaluable(*f)) continue;
    // A spec given twice is evaluated once ahead; its second load evaluates it again then.
    Request r = jsonnet::request_for(*f);
    if (std::find(requests.begin(), requests.end(), r) == requests.end()) requests.push_back(std::move(r));
  }
  if (!requests.empty()) jsonnet::prefetch(std::move(requests));
}

std::optional<Document> load_jsonnet(SourcePtr file, Diagnostics& diags) {
  if (auto why = not_evaluable(*file)) {
    diags.report({Severity::error, file->name(), file->loc_of(why->first), "", why->second, {}});
    return std::nullopt;
  }
  Evaluation e = evaluate(*file);
  if (e.outcome == Evaluation::Outcome::jsonnet_error) {
    jsonnet::report_error(*file, e.text, diags);
    return std::nullopt;
  }
  if (e.outcome == Evaluation::Outcome::stopped) {
    diags.report({Severity::error, file->name(), Loc{1, 1, 1}, "", e.text, {}});
    return std::nullopt;
  }
  Document doc;
  doc.file = file;
  // libjsonnet's output is JSON, but strings read with importstr pass any bytes through.
  doc.root = nlohmann::json::parse(e.text, nullptr, /*allow_exceptions=*/false);
  if (doc.root.is_discarded()) {
    diags.report({Severity::error,
                  file->name(),
                  Loc{1, 1, 1},
                  "",
                  fmt::format("evaluating '{}' gives text that is not JSON in UTF-8 (a file read with importstr "
                              "that is not UTF-8 text?)",
                              file->name()),
                  {}});
    return std::nullopt;
  }
  doc.spans[""] = Span{{}, Loc{1, 1, 1}};
  if (!limits::check_document(doc, diags)) return std::nullopt;
  jsonnet::recover_positions(doc);
  return doc;
}

}  // namespace trainc
