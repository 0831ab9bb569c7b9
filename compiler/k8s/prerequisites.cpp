#include "k8s/prerequisites.h"

#include <fmt/format.h>

#include <map>

#include "quoting/shell.h"

namespace trainc::k8s {
namespace {

/// The variables the AWS CLI reads static credentials from (AWS CLI User Guide, "Environment
/// variables to configure the AWS CLI"): what an S3 store's credentialsSecret must hold for the
/// entry script's `aws s3 sync`.
const std::set<std::string>& aws_keys() {
  static const std::set<std::string> keys{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"};
  return keys;
}

/// Collects the Secrets, keyed by name.
class SecretList {
 public:
  void env(const SecretEnvMap& secrets, const std::string& who) {
    for (const auto& [var, s] : secrets) {
      Prerequisite& p = at(s.secret);
      p.keys.insert(s.key);
      p.users.push_back(fmt::format("{} ({})", who, var));
    }
  }
  void whole(const std::string& name, const std::set<std::string>& keys, const std::string& who) {
    Prerequisite& p = at(name);
    p.whole = true;
    p.keys.insert(keys.begin(), keys.end());
    p.users.push_back(who);
  }
  void into(std::vector<Prerequisite>& out) {
    for (auto& [_, p] : by_name_) out.push_back(std::move(p));
  }

 private:
  Prerequisite& at(const std::string& name) {
    Prerequisite& p = by_name_[name];
    p.kind = Prerequisite::Kind::kSecret;
    p.name = name;
    return p;
  }
  std::map<std::string, Prerequisite> by_name_;
};

}  // namespace

std::string Prerequisite::ref() const {
  switch (kind) {
    case Kind::kNamespace: return "namespace/" + name;
    case Kind::kServiceAccount: return "serviceaccount/" + name;
    case Kind::kSecret: return "secret/" + name;
  }
  return name;
}

std::set<std::string> store_secrets(const System& sys, const Step& step) {
  std::set<std::string> out;
  auto note = [&](const std::string& store) {
    if (const Store* s = sys.store(store); s && !s->credentials_secret.empty()) out.insert(s->credentials_secret);
  };
  for (const auto& in : step.inputs) note(in.from.store);
  if (step.outputs) note(step.outputs->to.store);
  return out;
}

std::vector<Prerequisite> prerequisites(const System& sys) {
  std::vector<Prerequisite> out;
  if (!sys.owns_namespace) out.push_back({Prerequisite::Kind::kNamespace, sys.ns, {}, {"every pod"}, false});
  if (!sys.service_account.empty() && !sys.identity)
    out.push_back({Prerequisite::Kind::kServiceAccount, sys.service_account, {}, {"the steps' and clusters' pods"}, false});
  SecretList secrets;
  for (const auto& step : sys.steps) {
    const ComputeCluster* on = sys.compute_cluster(step.cluster);
    if (on && !on->steps_have_own_pods()) continue;  // it runs in the cluster's pods, which read the cluster's env
    const std::string who = fmt::format("step '{}'", step.name);
    secrets.env(step.secret_env, who);
    for (const auto& name : store_secrets(sys, step))
      secrets.whole(name, aws_keys(), who + " (every key, for its S3 syncs)");
  }
  for (const auto& [name, c] : sys.clusters) secrets.env(c.secret_env, fmt::format("cluster '{}'", name));
  for (const auto& [name, s] : sys.services) secrets.env(s.secret_env, fmt::format("service '{}'", name));
  secrets.into(out);
  return out;
}

CommandLine create_command(const KubeTarget& t, const System& sys, const Prerequisite& p) {
  switch (p.kind) {
    case Prerequisite::Kind::kNamespace: return cmd::kubectl(t, {"create", "namespace", p.name});
    case Prerequisite::Kind::kServiceAccount: return cmd::kubectl(t, {"create", "serviceaccount", p.name, "-n", sys.ns});
    case Prerequisite::Kind::kSecret: break;
  }
  CommandLine c = cmd::kubectl(t, {"create", "secret", "generic", p.name, "-n", sys.ns});
  for (const auto& key : p.keys) {
    // The prompt goes to the terminal (read -p writes it to stderr); the value only to kubectl.
    const std::string prompt = sh_quote(fmt::format("{} of Secret {}: ", key, p.name));
    c.word(fmt::format("--from-literal={}=\"$(read -rsp {} v; echo >&2; printf '%s' \"$v\")\"", sh_quote(key), prompt));
  }
  return c;
}

}  // namespace trainc::k8s
