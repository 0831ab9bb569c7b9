#include "kubectl_cluster.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/printable.h"
#include "inspect/plan.h"
#include "k8s/update_rules.h"
#include "run/process.h"

namespace trainc {
namespace {

using json = nlohmann::json;

bool kind_unknown(const std::string& message) {
  return message.find("no matches for kind") != std::string::npos ||
         message.find("doesn't have a resource type") != std::string::npos ||
         message.find("resource mapping not found") != std::string::npos ||
         message.find("ensure CRDs are installed first") != std::string::npos;
}

/// What kubectl matches a document by: API group, kind, namespace and name. A document is a manifest
/// of the output (YAML) or a last-applied configuration (JSON).
k8s::ObjectKey key_of(const std::string& doc) {
  if (doc.starts_with('{')) return k8s::object_key(json::parse(doc));
  return k8s::object_key(k8s::manifest_json(YAML::Load(doc)));
}

/// Whether every error kubectl printed (`err`) says that an object's kind is unknown to the server
/// (cli-runtime's "resource mapping not found for name: N namespace: NS from S: no matches for kind
/// K in version G/V"); those objects' keys are added to `keys`.
bool unknown_kinds_only(const std::string& err, std::set<k8s::ObjectKey>& keys) {
  static const std::regex unknown(
      R"re(resource mapping not found for name: "([^"]*)" namespace: "([^"]*)" from "[^"]*": no matches for kind "([^"]*)" in version "(?:([^"/]*)/)?[^"]*")re");
  bool any = false;
  for (size_t at = 0; at < err.size();) {
    size_t end = err.find('\n', at);
    if (end == std::string::npos) end = err.size();
    const std::string line = err.substr(at, end - at);
    at = end + 1;
    if (line.find_first_not_of(' ') == std::string::npos || line.starts_with("Warning:") ||
        line == "ensure CRDs are installed first")
      continue;
    std::smatch m;
    if (!std::regex_search(line, m, unknown)) return false;
    // The group of "kueue.x-k8s.io/v1beta2"; none (the core group) of "v1".
    keys.insert({m[4].str(), m[3].str(), m[2].str(), m[1].str()});
    any = true;
  }
  return any;
}

/// The server's words: kubectl's warnings left out, lines joined.
std::string server_words(const std::string& message) {
  std::string out;
  for (size_t at = 0; at < message.size();) {
    size_t end = message.find('\n', at);
    if (end == std::string::npos) end = message.size();
    std::string line = message.substr(at, end - at);
    at = end + 1;
    if (line.starts_with("Warning:") || line.find_first_not_of(' ') == std::string::npos) continue;
    out += (out.empty() ? "" : " ") + line;
  }
  if (const auto e = out.find("Error from server"); e != std::string::npos) out = out.substr(e);
  return printable(out);
}

}  // namespace

std::vector<std::string> KubectlCluster::base() const {
  std::vector<std::string> a{t_.kubectl};
  if (!t_.kubeconfig.empty()) a.push_back("--kubeconfig=" + t_.kubeconfig);
  if (!t_.context.empty()) a.push_back("--context=" + t_.context);
  a.push_back(fmt::format("--request-timeout={}s", t_.timeout_s));
  return a;
}

Exchanged KubectlCluster::run(std::vector<std::string> args, const std::string& input) {
  std::vector<std::string> argv = base();
  argv.insert(argv.end(), args.begin(), args.end());
  Exchanged x = exchange(argv, input, t_.timeout_s + 15);
  if (x.code == -1) throw LiveError(fmt::format("cannot run {}: {}", t_.kubectl, x.err));
  if (x.code == -2) throw LiveError(fmt::format("{} did not answer within {} s", t_.kubectl, t_.timeout_s + 15));
  return x;
}

LiveCluster::Answer KubectlCluster::ask(std::vector<std::string> args, const std::string& input, bool dry_run) {
  const Exchanged x = run(std::move(args), input);
  Answer a;
  if (x.code != 0) {
    a.message = server_words(x.err.empty() ? x.out : x.err);
    // Not allowed by RBAC: a question trainc cannot ask, not the server's answer to the change. A
    // dry run is authorized as the write it stands for: diff --live then judges read-only.
    if (a.message.find("(Forbidden)") != std::string::npos && a.message.find("is forbidden: User") != std::string::npos) {
      if (dry_run) {
        a.forbidden = true;
        return a;
      }
      throw LiveError(fmt::format("the credentials may not read this ({}); diff --live needs get and list on the "
                                  "system's objects",
                                  a.message));
    }
    a.missing = a.message.find("(NotFound)") != std::string::npos || kind_unknown(a.message);
    a.kind_unknown = kind_unknown(a.message);
    return a;
  }
  try {
    a.object = json::parse(x.out);
    a.ok = true;
  } catch (const json::parse_error& e) {
    throw LiveError(fmt::format("{} answered with what is not JSON: {}", t_.kubectl, e.what()));
  }
  return a;
}

std::string KubectlCluster::reach(std::string& error) {
  std::vector<std::string> argv = base();
  argv.insert(argv.end(), {"version", "--output=json"});
  auto asked = std::async(std::launch::async, [&] { return exchange(argv, "", t_.timeout_s + 15); });
  std::string context = t_.context;
  if (context.empty()) {
    std::vector<std::string> cur = base();
    cur.insert(cur.end(), {"config", "current-context"});
    const Exchanged c = exchange(cur, "", 15);
    context = c.code == 0 ? c.out.substr(0, c.out.find('\n')) : "";
  }
  const Exchanged x = asked.get();
  std::string server;
  if (x.code == 0) {
    try {
      server = json::parse(x.out).at("serverVersion").value("gitVersion", "");
    } catch (const std::exception&) {
    }
  }
  if (x.code == -1) error = fmt::format("cannot run {}: {}", t_.kubectl, x.err);
  else if (server.empty())
    error = fmt::format("cannot reach the cluster of {}: {}",
                        context.empty() ? "the current context (none is set)" : "context '" + context + "'",
                        printable(x.err.empty() ? std::string("no answer") : server_words(x.err)));
  return context.empty() ? fmt::format("the cluster ({})", server) : fmt::format("context '{}' ({})", context, server);
}

LiveCluster::Answer KubectlCluster::get(const std::string& yaml) {
  Answer a = ask({"get", "--filename=-", "--output=json", "--show-managed-fields"}, yaml);
  // kubectl get --filename answers with a List, even of one object.
  if (a.ok && a.object.value("kind", "") == "List") {
    const json items = a.object.value("items", json::array());
    if (items.size() != 1) throw LiveError(fmt::format("kubectl get answered with {} objects for one", items.size()));
    a.object = items[0];
  }
  return a;
}

LiveCluster::Answer KubectlCluster::dry_run_apply(const std::string& yaml) {
  return ask({"apply", "--dry-run=server", "--filename=-", "--output=json"}, yaml, true);
}

LiveCluster::Answer KubectlCluster::list(const std::string& type, const std::string& ns, const std::string& selector) {
  std::vector<std::string> args{"get", type, "--selector=" + selector, "--output=json"};
  if (!ns.empty()) args.push_back("--namespace=" + ns);
  Answer a = ask(args, "");
  if (!a.ok && a.kind_unknown) {
    a.ok = true;  // the type's add-on is not installed: none
    a.object = {{"items", json::array()}};
  }
  return a;
}

// --- many at a time ---------------------------------------------------------------------------

std::vector<LiveCluster::Answer> KubectlCluster::batch(const std::vector<std::string>& args,
                                                       const std::vector<std::string>& docs,
                                                       const std::function<Answer(const std::string&)>& alone,
                                                       bool read) {
  std::vector<Answer> out(docs.size());
  if (docs.empty()) return out;
  if (docs.size() == 1) {
    out[0] = alone(docs[0]);
    return out;
  }
  std::string input;
  for (const auto& d : docs) input += "---\n" + d + (d.ends_with('\n') ? "" : "\n");
  const Exchanged x = run(args, input);
  // kubectl answers with a List, or with the object alone when it is one; what it could not do it
  // says on stderr, and it goes on with the others.
  std::map<k8s::ObjectKey, json> answered;
  try {
    if (!x.out.empty()) {
      json got = json::parse(x.out);
      // The key first: json's assignment takes its value by copy, which would move it out before.
      const auto keep = [&answered](json& item) {
        const k8s::ObjectKey key = k8s::object_key(item);
        answered[key] = std::move(item);
      };
      if (got.value("kind", "") == "List")
        for (auto& item : got["items"]) keep(item);
      else
        keep(got);
    }
  } catch (const json::exception& e) {
    if (x.code == 0) throw LiveError(fmt::format("{} answered with what is not JSON: {}", t_.kubectl, e.what()));
    answered.clear();  // ask each alone
  }
  // A read whose only errors are kinds the server does not know (their add-ons not installed yet):
  // those objects are of such a kind, the others left out not found.
  std::set<k8s::ObjectKey> unknown_kinds;
  const bool read_through = read && (x.code == 0 || unknown_kinds_only(x.err, unknown_kinds));
  std::vector<size_t> unanswered;
  for (size_t i = 0; i < docs.size(); ++i) {
    const k8s::ObjectKey key = key_of(docs[i]);
    const auto it = answered.find(key);
    if (it != answered.end()) {
      out[i].ok = true;
      out[i].object = std::move(it->second);
    } else if (read_through) {
      out[i].missing = true;  // read with --ignore-not-found: not found, or a kind the server does not know
      out[i].kind_unknown = unknown_kinds.count(key) > 0;
      out[i].message = out[i].kind_unknown ? "the server does not know this kind (no matches for kind)"
                                           : "Error from server (NotFound): not found";
    } else {
      unanswered.push_back(i);
    }
  }
  constexpr size_t kAtOnce = 4;
  for (size_t i = 0; i < unanswered.size(); i += kAtOnce) {
    std::vector<std::future<Answer>> asking;
    for (size_t j = i; j < std::min(unanswered.size(), i + kAtOnce); ++j)
      asking.push_back(std::async(std::launch::async, alone, docs[unanswered[j]]));
    for (size_t j = 0; j < asking.size(); ++j) out[unanswered[i + j]] = asking[j].get();
  }
  return out;
}

std::vector<LiveCluster::Answer> KubectlCluster::get_each(const std::vector<std::string>& yamls) {
  return batch({"get", "--filename=-", "--output=json", "--show-managed-fields", "--ignore-not-found"}, yamls,
               [this](const std::string& y) { return get(y); }, true);
}

std::vector<LiveCluster::Answer> KubectlCluster::dry_run_each(const std::vector<std::string>& yamls) {
  // kubectl applies one object after another (a read, then the dry-run patch or create), so the
  // objects are split among up to four kubectl at once, three or more each.
  constexpr size_t kParts = 4, kLeast = 3;
  const size_t parts = std::clamp<size_t>((yamls.size() + kLeast - 1) / kLeast, 1, kParts);
  const size_t each = (yamls.size() + parts - 1) / parts;
  std::vector<std::future<std::vector<Answer>>> asking;
  for (size_t at = 0; at < yamls.size(); at += each) {
    std::vector<std::string> part(yamls.begin() + at, yamls.begin() + std::min(yamls.size(), at + each));
    asking.push_back(std::async(std::launch::async, [this, part = std::move(part)] {
      return batch({"apply", "--dry-run=server", "--filename=-", "--output=json"}, part,
                   [this](const std::string& y) { return dry_run_apply(y); }, false);
    }));
  }
  std::vector<Answer> out;
  for (auto& a : asking)
    for (auto& answer : a.get()) out.push_back(std::move(answer));
  return out;
}

LiveCluster::Answer KubectlCluster::list_all(const std::vector<std::string>& types, const std::string& ns,
                                             const std::string& selector) {
  std::call_once(discovered_, [this] {
    const Exchanged x = run({"api-resources", "--verbs=list", "--output=name"}, "");
    if (x.code != 0) return;  // a group whose discovery failed: ask type by type
    std::set<std::string> names;
    for (size_t at = 0; at < x.out.size();) {
      size_t end = x.out.find('\n', at);
      if (end == std::string::npos) end = x.out.size();
      if (end > at) names.insert(x.out.substr(at, end - at));
      at = end + 1;
    }
    known_types_ = std::move(names);
  });
  if (!known_types_) return LiveCluster::list_all(types, ns, selector);
  std::vector<std::string> known;
  for (const auto& t : types)
    if (known_types_->count(t)) known.push_back(t);  // the others' add-ons are not installed: none of them
  Answer a;
  if (known.empty()) {
    a.ok = true;
    a.object = {{"items", json::array()}};
    return a;
  }
  std::vector<std::string> args{"get", fmt::format("{}", fmt::join(known, ",")), "--selector=" + selector,
                                "--output=json"};
  if (!ns.empty()) args.push_back("--namespace=" + ns);
  a = ask(args, "");
  if (!a.ok && a.kind_unknown) return LiveCluster::list_all(types, ns, selector);  // its CRD went meanwhile
  if (!a.ok) a.message = fmt::format("{}: {}", fmt::join(known, ","), a.message);
  return a;
}

int diff_live_and_print(const System& sys, const OutputFiles& files, KubectlTarget target, const std::string& format,
                        bool read_only) {
  if (const char* k = std::getenv("TRAINC_KUBECTL"); k && *k) target.kubectl = k;
  KubectlCluster cluster(target);
  std::string error;
  const std::string where = cluster.reach(error);
  if (!error.empty()) {
    fmt::print(stderr, "trainc: error: {}; nothing was compared (kubectl's context: --context, --kubeconfig or "
                       "KUBECONFIG)\n", error);
    return 2;
  }
  AgainstPlan a;
  try {
    a = diff_live(sys, make_plan(sys), files, cluster, where, {.read_only = read_only});
  } catch (const LiveError& e) {
    fmt::print(stderr, "trainc: error: {} ({}); nothing was written\n", printable(e.what()), where);
    return 2;
  } catch (const std::runtime_error& e) {
    fmt::print(stderr, "trainc: error: {}\n", printable(e.what()));
    return 2;
  }
  if (format == "json")
    fmt::print("{}\n", live_json(a, where).dump(2));
  else
    fmt::print("{}", printable(render_against_text(a)));
  return live_exit_code(a);
}

}  // namespace trainc
