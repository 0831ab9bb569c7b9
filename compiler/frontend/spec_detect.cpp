#include "frontend/spec_detect.h"

#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "frontend/jsonnet_loader.h"

namespace trainc {
namespace {

constexpr std::string_view kNoApiVersion = "no apiVersion: trainc/v1";

/// nullopt when the document is (meant as) a spec; else why not.
std::optional<std::string> judge(const nlohmann::json& doc) {
  if (!doc.is_object()) return std::string("not a mapping");
  auto kind = doc.find("kind");
  if (kind != doc.end() && kind->is_string() && kind->get<std::string>() == "TrainingSystem") return std::nullopt;
  auto api = doc.find("apiVersion");
  if (api == doc.end() || api->is_null()) return std::string(kNoApiVersion);
  if (api->is_string() && api->get<std::string>().starts_with("trainc/")) return std::nullopt;
  std::string shown = api->is_string() ? api->get<std::string>() : api->dump();
  if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
  return fmt::format("apiVersion: {}", shown);
}

nlohmann::json scalar_json(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsNull()) return nullptr;
  return node.IsMap() ? nlohmann::json::object() : nlohmann::json::array();
}

/// The top-level kind and apiVersion of a YAML document (all trainc looks at).
nlohmann::json yaml_head(const YAML::Node& node) {
  if (!node.IsMap()) return nullptr;
  nlohmann::json head = nlohmann::json::object();
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) continue;
    const std::string& key = kv.first.Scalar();
    if (key == "apiVersion" || key == "kind") head[key] = scalar_json(kv.second);
  }
  return head;
}

std::optional<std::string> judge_yaml(const std::string& text) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::Exception&) {
    static const std::regex named(R"((^|\n)\s*["']?(apiVersion["']?\s*:\s*["']?trainc/|kind["']?\s*:\s*["']?TrainingSystem))");
    if (std::regex_search(text, named)) return std::nullopt;
    return std::string("not valid YAML, and no apiVersion: trainc/v1 in it");
  }
  std::optional<std::string> first;
  for (const auto& d : docs) {
    if (d.IsNull()) continue;
    auto why = judge(yaml_head(d));
    if (!why) return std::nullopt;
    if (!first) first = why;
  }
  return first ? first : std::optional<std::string>("empty");
}

std::optional<std::string> judge_jsonnet(const SourcePtr& file) {
  Diagnostics scratch;
  auto doc = load_jsonnet(file, scratch);
  if (!doc) {
    if (file->text().find("trainc") != std::string::npos) return std::nullopt;
    return std::string("Jsonnet that does not evaluate here, and does not mention trainc");
  }
  return judge(doc->root);
}

}  // namespace

std::optional<std::string> non_spec_reason(const SourcePtr& file) {
  const std::string& name = file->name();
  if (name.ends_with(".jsonnet") || name.ends_with(".libsonnet")) return judge_jsonnet(file);
  return judge_yaml(file->text());
}

}  // namespace trainc
