// The Secrets the runbook and apply.sh ask for (k8s::prerequisites) are exactly those the emitted
// objects name, found by walking every object: an emitter that starts naming a Secret another way
// fails here until prerequisites() knows it.
#include <filesystem>
#include <set>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "driver.h"
#include "emit/verify_objects.h"
#include "k8s/prerequisites.h"

namespace trainc {
namespace {

namespace fs = std::filesystem;

/// Every Secret name a Kubernetes object refers to, wherever it sits: env valueFrom.secretKeyRef,
/// envFrom.secretRef, a secret volume or projection, imagePullSecrets.
void secret_names(const nlohmann::json& node, std::set<std::string>& out) {
  if (node.is_array()) {
    for (const auto& v : node) secret_names(v, out);
    return;
  }
  if (!node.is_object()) return;
  for (const auto& [key, v] : node.items()) {
    if ((key == "secretKeyRef" || key == "secretRef") && v.is_object() && v.contains("name"))
      out.insert(v["name"].get<std::string>());
    else if (key == "secret" && v.is_object() && v.contains("secretName"))
      out.insert(v["secretName"].get<std::string>());
    else if (key == "secret" && v.is_object() && v.contains("name"))  // a projected volume's source
      out.insert(v["name"].get<std::string>());
    else if (key == "imagePullSecrets" && v.is_array())
      for (const auto& s : v) out.insert(s.value("name", ""));
    secret_names(v, out);
  }
}

std::vector<fs::path> specs() {
  std::vector<fs::path> out{fs::path(TRAINC_SOURCE_ROOT) / "tests/prerequisites/spec.yaml"};
  for (const auto& dir : fs::directory_iterator(fs::path(TRAINC_SOURCE_ROOT) / "examples"))
    for (const char* name : {"spec.yaml", "spec.jsonnet"})
      if (fs::exists(dir.path() / name)) out.push_back(dir.path() / name);
  return out;
}

}  // namespace

TEST_CASE("the prerequisites list every Secret the emitted objects name, and no other") {
  int secrets_seen = 0;
  for (const auto& spec : specs()) {
    CAPTURE(spec.string());
    std::string error;
    SourcePtr src = read_source(spec.string(), error);
    REQUIRE(src);
    Diagnostics diags;
    auto compiled = compile_source(src, diags);
    REQUIRE_MESSAGE(compiled, diags.render_text());
    std::set<std::string> named;
    for (const auto& [path, text] : compiled->files.under("k8s/"))
      for (const auto& doc : k8s_documents(text)) secret_names(doc, named);
    std::set<std::string> listed;
    for (const auto& p : k8s::prerequisites(compiled->system))
      if (p.kind == k8s::Prerequisite::Kind::kSecret) listed.insert(p.name);
    CHECK(listed == named);
    secrets_seen += static_cast<int>(named.size());
    // apply.sh asks for each one, with its keys.
    if (compiled->files.files().count("scripts/apply.sh"))
      for (const auto& name : listed)
        CHECK(compiled->files.files().at("scripts/apply.sh").find("need_secret " + name + " ") != std::string::npos);
  }
  CHECK(secrets_seen >= 5);  // the test spec's five: aws-creds, dask-auth, db, hf, wandb
}

TEST_CASE("a Secret's prerequisite has every key its readers use, and a command that writes no value") {
  std::string error;
  SourcePtr src = read_source((fs::path(TRAINC_SOURCE_ROOT) / "tests/prerequisites/spec.yaml").string(), error);
  REQUIRE(src);
  Diagnostics diags;
  auto compiled = compile_source(src, diags);
  REQUIRE_MESSAGE(compiled, diags.render_text());
  std::map<std::string, k8s::Prerequisite> by_name;
  for (const auto& p : k8s::prerequisites(compiled->system)) by_name[p.name] = p;
  REQUIRE(by_name.count("aws-creds"));
  CHECK(by_name["aws-creds"].whole);
  CHECK(by_name["aws-creds"].keys == std::set<std::string>{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"});
  REQUIRE(by_name.count("wandb"));
  CHECK(by_name["wandb"].users == std::vector<std::string>{"step 'fetch' (WANDB_API_KEY)", "service 'chat' (WANDB_API_KEY)"});
  CHECK(by_name["hf"].keys == std::set<std::string>{"token"});
  const std::string make = k8s::create_command(KubeTarget{}, compiled->system, by_name["hf"]).line();
  CHECK(make ==
        "kubectl create secret generic hf -n prereqs --from-literal=token=\"$(read -rsp 'token of Secret hf: ' v; "
        "echo >&2; printf '%s' \"$v\")\"");
}

}  // namespace trainc
