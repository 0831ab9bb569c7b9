// scripts/health.sh: asks every service whether it serves, as a client would (emit_scripts.h).
#include <fmt/format.h>

#include "emit/contents.h"
#include "emit/emit_scripts.h"
#include "k8s/names.h"
#include "model/catalog.h"

namespace trainc::scripts {
namespace {

/// A host the gateway routes to the service: its first, with a wildcard label made concrete.
std::string probe_host(const Service& s) {
  std::string h = s.expose.hosts.empty() ? "*" : s.expose.hosts.front();
  if (h == "*") return "";
  if (h.starts_with("*.")) h = "health" + h.substr(1);
  return h;
}

bool lists_models(const System& sys) {
  for (const auto& [_, s] : sys.services)
    for (const HealthCheck& c : s.health_checks())
      if (!c.lists.empty()) return true;
  return false;
}

void listed_function(ShellScript& sh) {
  sh.line();
  sh.comment(R"(Runs the request after $1 and passes when its JSON answer lists model $1 as an "id".)");
  sh.open("listed() {")
      .line("local model=$1 answer")
      .line("shift")
      .line(R"(answer=$("$@") || return 1)")
      .line(R"([[ $answer == *"\"id\":\"$model\""* || $answer == *"\"id\": \"$model\""* ]])")
      .close("}");
}

void health_functions(ShellScript& sh) {
  sh.line();
  sh.comment("Tries \"$@\" up to ATTEMPTS times, DELAY seconds apart; $1 says what is checked.");
  sh.open("until_ok() {")
      .line("local what=$1 attempt")
      .line("shift")
      .open("for ((attempt = 1; attempt <= ATTEMPTS; attempt++)); do")
      .open("if run \"$@\"; then")
      .line("log \"$what: ready\"")
      .line("return 0")
      .close("fi")
      .line("log \"$what: not yet (attempt $attempt of $ATTEMPTS); trying again in ${DELAY}s\"")
      .line("sleep \"$DELAY\"")
      .close("done")
      .line("return 1")
      .close("}");
}

/// A kubectl command on the current context, for a message to the reader (inside double quotes:
/// names only).
std::string hint(std::initializer_list<std::string_view> literals) {
  return cmd::kubectl(KubeTarget{}, literals).line();
}

void gateway_address(ShellScript& sh) {
  const Operator& gw = catalog().istio_gateway();
  const std::string get = cmd::load_balancer_ip(kube_target(), gw.release, gw.ns).line();
  sh.line();
  sh.comment("The ingress gateway's external IP, once Google Cloud has given it one.");
  sh.open("gateway_ip() {")
      .line("local ip attempt")
      .open("if [ \"$DRY_RUN\" = 1 ]; then")
      .line("run " + get)
      .line("echo GATEWAY_IP")
      .line("return 0")
      .close("fi")
      .open("for ((attempt = 1; attempt <= ATTEMPTS; attempt++)); do")
      .line("ip=$(" + get + ") || ip=")
      .open("if [ -n \"$ip\" ]; then")
      .line("echo \"$ip\"")
      .line("return 0")
      .close("fi")
      .line("log \"the gateway has no external IP yet (attempt $attempt of $ATTEMPTS); trying again in ${DELAY}s\"")
      .line("sleep \"$DELAY\"")
      .close("done")
      .line("return 1")
      .close("}");
  sh.line("GATEWAY_IP=$(gateway_ip) ||");
  sh.line(fmt::format("  die {}", dq(fmt::format("the Istio ingress gateway (service {}/{}) got no external IP in ", gw.ns,
                                                  gw.release),
                                      Var{"ATTEMPTS"},
                                      " tries; see: " + hint({"describe", "service", gw.release, "-n", gw.ns}))));
}

/// The checks of one service (its kind's health checks): the server is ready, then each model.
void health_checks(ShellScript& sh, const System& sys, const Service& s) {
  const std::string name = k8s::service_name(sys, s);
  const std::string see = "; see: " + hint({"logs", "-n", sys.ns, "deployment/" + name});
  struct Check {
    std::string what, path, listed;
  };
  std::vector<Check> checks;
  for (const HealthCheck& c : s.health_checks())
    checks.push_back({c.proves.empty() ? fmt::format("service '{}'", s.name)
                                       : fmt::format("{} of service '{}'", c.proves, s.name),
                      c.path, c.lists});
  sh.line();
  if (s.expose.gateway) {
    const std::string host = probe_host(s);
    sh.comment(fmt::format("Service '{}': through the ingress gateway{}, as clients call it.", s.name,
                           host.empty() ? "" : " (Host: " + host + ")"));
    for (const auto& [what, path, listed] : checks) {
      Call c{{"until_ok", dq(what)}, {}};
      if (!listed.empty()) c.words.insert(c.words.end(), {"listed", lit(listed)});
      c.words.insert(c.words.end(), {"curl", "-fsS"});
      if (listed.empty()) c.words.insert(c.words.end(), {"-o", "/dev/null"});
      c.words.insert(c.words.end(), {"--max-time", "5"});
      if (!host.empty()) c.words.insert(c.words.end(), {"-H", lit("Host: " + host)});
      const std::string at = s.expose.path_prefix + path;
      c.words.push_back(dq("http://", Var{"GATEWAY_IP"}, at));
      for (const auto& l : render(c, "", " ||")) sh.line(l);
      sh.line(fmt::format("  die {}", dq(what + (listed.empty() ? " is not ready" : " is not listed") + " at http://",
                                         Var{"GATEWAY_IP"}, at + " after ", Var{"ATTEMPTS"}, " tries" + see)));
    }
    return;
  }
  sh.comment(fmt::format("Service '{}': inside the cluster, through the API server's service proxy.", s.name));
  for (const auto& [what, path, listed] : checks) {
    const std::string raw = fmt::format("/api/v1/namespaces/{}/services/{}:http/proxy{}", sys.ns, name, path);
    Call c{{"until_ok", dq(what)}, {}};
    if (!listed.empty()) c.words.insert(c.words.end(), {"listed", lit(listed)});
    const Call get = kubectl({"get", "--raw", lit(raw)});
    c.words.insert(c.words.end(), get.words.begin(), get.words.end());
    for (const auto& l : render(c, "", listed.empty() ? " >/dev/null ||" : " ||")) sh.line(l);
    sh.line(fmt::format("  die {}", dq(what + (listed.empty() ? " is not ready" : " is not listed") + " at " + raw +
                                         " after ", Var{"ATTEMPTS"}, " tries" + see)));
  }
}

}  // namespace

std::string health_script(const System& sys) {
  ShellScript sh;
  prologue(sh, sys,
           {"health.sh", "checks that the services serve",
            {"Asks each service whether it is ready, and each model the spec names, the way a",
             "client would: through the Istio ingress gateway's external IP for exposed services,",
             "through the API server's service proxy for the others. Each check is tried",
             "HEALTH_ATTEMPTS times (default 30), HEALTH_DELAY seconds apart (default 10).",
             "Exits 1 naming the first check that never passed. Changes nothing."}},
           {}, {.kube = true});
  sh.line("ATTEMPTS=\"${HEALTH_ATTEMPTS:-30}\"");
  sh.line("DELAY=\"${HEALTH_DELAY:-10}\"");
  sh.line("readonly ATTEMPTS DELAY");
  health_functions(sh);
  if (lists_models(sys)) listed_function(sh);
  sh.line();
  sh.line("if [ \"$DRY_RUN\" = 1 ]; then log 'dry run: commands are printed, not run'; fi");
  // What each server reads when it starts, first: without it no retry helps.
  for (const auto& [_, s] : sys.services) {
    bool needs = false;
    for (const StoreContents& c : s.store_contents()) needs = needs || !c.needs.empty();
    if (!needs) continue;
    sh.line();
    sh.comment(fmt::format("Service '{}' reads its store folders only when it starts: what it needs must be there.",
                           s.name));
    contents_lookups(sh, s);
  }
  if (sys.uses_gateway()) gateway_address(sh);
  for (const auto& [_, s] : sys.services) health_checks(sh, sys, s);
  log_line(sh, "every service serves");
  return sh.text();
}

}  // namespace trainc::scripts
