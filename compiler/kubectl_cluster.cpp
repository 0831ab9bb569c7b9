#include "kubectl_cluster.h"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/printable.h"
#include "inspect/plan.h"
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

LiveCluster::Answer KubectlCluster::ask(std::vector<std::string> args, const std::string& input, bool dry_run) {
  std::vector<std::string> argv = base();
  argv.insert(argv.end(), args.begin(), args.end());
  const Exchanged x = exchange(argv, input, t_.timeout_s + 15);
  Answer a;
  if (x.code == -1) throw LiveError(fmt::format("cannot run {}: {}", t_.kubectl, x.err));
  if (x.code == -2) throw LiveError(fmt::format("{} did not answer within {} s", t_.kubectl, t_.timeout_s + 15));
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
  const Exchanged x = exchange(argv, "", t_.timeout_s + 15);
  std::string context = t_.context;
  if (context.empty()) {
    std::vector<std::string> cur = base();
    cur.insert(cur.end(), {"config", "current-context"});
    const Exchanged c = exchange(cur, "", 15);
    context = c.code == 0 ? c.out.substr(0, c.out.find('\n')) : "";
  }
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
