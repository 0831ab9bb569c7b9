// Secrets: a spec is committed to a repository and its values land in plain text in Job manifests,
// ConfigMaps, model.yaml and the runbook. A value that looks like a credential is an error with a
// pointer to the Secret form (`{secretRef: {name, key}}`, emitted as valueFrom.secretKeyRef), unless
// the user names it with --allow-secret-like.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <string_view>
#include <vector>

#include "base/data_path.h"
#include "checks/checks.h"

namespace trainc {
namespace {

/// Why `value` looks like a credential, or nullopt. Values are at most a few KiB (the front end's
/// string limit), so the regexes run on bounded input.
std::optional<std::string> credential_shape(const std::string& value) {
  struct Shape {
    const char* what;
    std::vector<std::string_view> needs;  ///< the regex cannot match unless one of these is in the value
    std::regex re;
  };
  static const std::array<Shape, 9> shapes{{
      {"a private key", {"-----BEGIN "}, std::regex("-----BEGIN [A-Z ]*PRIVATE KEY")},
      {"an AWS access key id", {"AKIA", "ASIA"}, std::regex("\\b(AKIA|ASIA)[0-9A-Z]{16}\\b")},
      {"a Google API key", {"AIza"}, std::regex("\\bAIza[0-9A-Za-z_-]{35}\\b")},
      {"a GitHub token",
       {"gh", "github_pat_"},
       std::regex("\\b(gh[pousr]_[0-9A-Za-z]{36}|github_pat_[0-9A-Za-z_]{22,})")},
      {"a Slack token", {"xox"}, std::regex("\\bxox[abprs]-[0-9A-Za-z-]{10,}")},
      {"a Hugging Face token", {"hf_"}, std::regex("\\bhf_[0-9A-Za-z]{30,}\\b")},
      {"a JSON Web Token", {"eyJ"}, std::regex("\\beyJ[0-9A-Za-z_-]{8,}\\.eyJ[0-9A-Za-z_-]{8,}\\.[0-9A-Za-z_-]+")},
      {"a Google service account key", {"\"private_key"}, std::regex("\"private_key(_id)?\"\\s*:")},
      {"a password or token given inline",
       {"="},
       std::regex("(^|[-_ ?&;])(password|passwd|pwd|secret|token|api[-_]?key|access[-_]?key)=[^ $&{][^ &]{3,}",
                  std::regex::icase)},
  }};
  if (value.size() > 8192) return std::nullopt;
  for (const auto& s : shapes) {
    // std::regex is slow, and most values hold none of a shape's fixed text: skip those.
    if (std::none_of(s.needs.begin(), s.needs.end(),
                     [&](std::string_view n) { return value.find(n) != std::string::npos; }))
      continue;
    if (std::regex_search(value, s.re)) return std::string(s.what);
  }
  return std::nullopt;
}

/// Whether an env name says its value is a credential (API_TOKEN, DB_PASSWORD, AWS_SECRET_ACCESS_KEY).
bool secret_name(const std::string& name) {
  std::string up;
  for (char c : name) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::regex re("(^|_)(PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)(_|$)");
  return std::regex_search(up, re);
}

/// A long random-looking word: 24+ characters from the base64/hex alphabets with mixed character
/// classes and more than 4.2 bits of entropy per character (English words and paths score lower).
bool high_entropy(const std::string& value) {
  if (value.size() < 24 || value.size() > 512) return false;
  std::map<char, int> counts;
  bool lower = false, upper = false, digit = false;
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '+' && c != '/' && c != '=' && c != '_' && c != '-') return false;
    lower = lower || std::islower(u);
    upper = upper || std::isupper(u);
    digit = digit || std::isdigit(u);
    ++counts[c];
  }
  if (static_cast<int>(lower) + static_cast<int>(upper) + static_cast<int>(digit) < 3) return false;
  double bits = 0;
  for (const auto& [_, n] : counts) {
    const double p = static_cast<double>(n) / static_cast<double>(value.size());
    bits -= p * std::log2(p);
  }
  return bits > 4.2;
}

struct Scanner {
  const Document& doc;
  Diagnostics& diags;
  const CheckOptions& opts;

  bool allowed(const std::string& name, const std::string& ptr) const {
    return opts.allow_secret_like.count(name) || opts.allow_secret_like.count(ptr_display(ptr));
  }

  void report(const std::string& ptr, const std::string& what, const std::string& fix, const std::string& allow) {
    doc.error(diags, ptr,
              fmt::format("this looks like {}; a spec is committed and this value would be written in plain text into "
                          "the manifests. {}, or pass --allow-secret-like {} if it is not a secret",
                          what, fix, allow),
              Anchor::value);
  }

  void env(const StringMap& env, const std::string& owner_ptr) {
    for (const auto& [name, value] : env) {
      const std::string ptr = ptr_key(ptr_key(owner_ptr, "env"), name);
      if (allowed(name, ptr) || opts.allow_secret_like.count(value) || value.empty()) continue;
      std::optional<std::string> what = credential_shape(value);
      if (!what && secret_name(name)) what = fmt::format("a credential (the variable is named {})", name);
      if (!what && high_entropy(value)) what = "a key or token (a long random string)";
      if (what)
        report(ptr, *what,
               fmt::format("Keep it in a Kubernetes Secret and refer to it: `{}: {{secretRef: {{name: SECRET, key: "
                           "KEY}}}}`",
                           name),
               name);
    }
  }

  void words(const std::vector<std::string>& argv, const std::string& ptr) {
    for (size_t i = 0; i < argv.size(); ++i) {
      const std::string p = ptr_index(ptr, i);
      if (allowed(argv[i], p)) continue;
      std::optional<std::string> what = credential_shape(argv[i]);
      if (!what && high_entropy(argv[i])) what = "a key or token (a long random string)";
      if (what)
        report(p, *what,
               "Pass it through an environment variable from a Kubernetes Secret (`env: {NAME: {secretRef: {name: "
               "SECRET, key: KEY}}}`) and read that in the program",
               ptr_display(p));
    }
  }

  void strings(const StringMap& m, const std::string& ptr) {
    for (const auto& [k, v] : m) {
      const std::string p = ptr_key(ptr, k);
      if (allowed(k, p)) continue;
      if (auto what = credential_shape(v))
        report(p, *what, "Labels and annotations are readable by anyone who can list the objects: remove it",
               ptr_display(p));
    }
  }
};

/// The data path of words a kind read from the spec: below its key, under the workload's node.
std::string words_ptr(const std::string& workload, const std::string& kind, const UserWords& w) {
  const std::string at = ptr_key(workload, kind);
  return w.key.empty() ? at : ptr_key(at, std::string(w.key));
}

}  // namespace

void check_secrets(const System& sys, const Document& doc, Diagnostics& diags, const CheckOptions& opts) {
  Scanner scan{doc, diags, opts};
  for (const auto& step : sys.steps) {
    scan.env(step.env, step.ptr);
    if (const ComputeCluster* c = sys.compute_cluster(step.cluster); c && !c->steps_read_secrets() && !step.secret_env.empty())
      doc.error(diags, ptr_key(ptr_key(step.ptr, "env"), step.secret_env.begin()->first),
                fmt::format("a step on Ray cluster '{}' passes its env in the RayJob's runtimeEnvYAML, which cannot "
                            "read a Secret: put the secretRef in the cluster's env instead",
                            c->name),
                Anchor::key);
    for (const UserWords& w : user_words(step.run)) scan.words(*w.words, words_ptr(step.ptr, step.kind(), w));
    scan.strings(step.labels, ptr_key(step.ptr, "labels"));
    scan.strings(step.annotations, ptr_key(step.ptr, "annotations"));
  }
  for (const auto& [_, c] : sys.clusters) scan.env(c.env, c.ptr);
  for (const auto& [_, s] : sys.services) {
    scan.env(s.env, s.ptr);
    for (const UserWords& w : s.user_words()) scan.words(*w.words, words_ptr(s.ptr, s.kind(), w));
  }
}

}  // namespace trainc
