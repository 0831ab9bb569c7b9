#include "commands/command.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "quoting/shell.h"

namespace trainc {

CommandLine& CommandLine::arg(std::string_view literal) {
  literals.emplace_back(literal);
  words.push_back(sh_quote(literal));
  return *this;
}

CommandLine& CommandLine::word(std::string shell_word) {
  shell_words = true;
  words.push_back(std::move(shell_word));
  return *this;
}

CommandLine& CommandLine::flag(std::string_view name) {
  literals.emplace_back(name);
  flags.emplace_back(name);
  return *this;
}

CommandLine& CommandLine::flag(std::string_view name, const std::string& shell_word) {
  shell_words = true;
  flags.push_back(fmt::format("{}{}{}", name, spaced ? " " : "=", shell_word));
  return *this;
}

CommandLine& CommandLine::opt(std::string_view name, std::string_view literal) {
  if (spaced) literals.insert(literals.end(), {std::string(name), std::string(literal)});
  else literals.push_back(fmt::format("{}={}", name, literal));
  flags.push_back(fmt::format("{}{}{}", name, spaced ? " " : "=", sh_quote(literal)));
  return *this;
}

std::vector<std::string> CommandLine::lines(std::string_view before, std::string_view after, std::size_t width) const {
  std::string head = std::string(before) + fmt::format("{}", fmt::join(words, " "));
  std::string one = head;
  for (const auto& f : flags) one += " " + f;
  if (flags.empty() || one.size() + after.size() <= width) return {one + std::string(after)};
  std::vector<std::string> out{head + " \\"};
  for (std::size_t i = 0; i < flags.size(); ++i)
    out.push_back("    " + flags[i] + (i + 1 == flags.size() ? std::string(after) : " \\"));
  return out;
}

CommandLine& CommandLine::next_line() {
  breaks.push_back(flags.size());
  return *this;
}

std::vector<std::string> CommandLine::parts() const {
  std::vector<std::string> out{fmt::format("{}", fmt::join(words, " "))};
  for (std::size_t i = 0; i < flags.size(); ++i) {
    if (std::find(breaks.begin(), breaks.end(), i) != breaks.end()) {
      out.back() += " \\";
      out.emplace_back(flags[i]);
    } else {
      out.back() += " " + flags[i];
    }
  }
  return out;
}

std::string CommandLine::line() const { return fmt::format("{}", fmt::join(parts(), "\n  ")); }

std::vector<std::string> CommandLine::argv() const {
  if (shell_words) throw std::logic_error("argv() of a command with shell words: " + line());
  return literals;
}

namespace cmd {
namespace {

/// `file` ("k8s/x.yaml") as the target names it: "${K8S_DIR}/x.yaml" in a script.
std::string k8s_file(const KubeTarget& t, std::string_view file) {
  if (t.k8s_dir.empty()) return sh_quote(file);
  std::string out = fmt::format("\"${{{}}}/", t.k8s_dir);
  for (char c : file.substr(std::string_view("k8s/").size())) {
    if (c == '"' || c == '\\' || c == '$' || c == '`') out += '\\';
    out += c;
  }
  return out + '"';
}

/// The flags every helm command of the target ends with.
CommandLine& helm_context(CommandLine& c, const KubeTarget& t) {
  if (!t.context.empty()) c.flag("--kube-context", t.context);
  return c;
}

}  // namespace

CommandLine gcloud(std::initializer_list<std::string_view> literals) {
  CommandLine c;
  c.arg("gcloud");
  for (auto w : literals) c.arg(w);
  return c;
}

CommandLine helm(const KubeTarget& t, std::initializer_list<std::string_view> literals) {
  CommandLine c;
  c.spaced = t.spaced;
  c.arg("helm");
  for (auto w : literals) c.arg(w);
  return c;
}

CommandLine kubectl(const KubeTarget& t, std::initializer_list<std::string_view> literals) {
  CommandLine c;
  c.spaced = t.spaced;
  c.arg("kubectl");
  if (!t.context.empty()) c.arg("--context").word(t.context);
  for (auto w : literals) c.arg(w);
  return c;
}

CommandLine apply_files(const KubeTarget& t, const std::vector<std::string>& files) {
  CommandLine c = kubectl(t, {"apply"});
  for (const auto& f : files) c.flags.push_back("-f " + k8s_file(t, f));
  c.shell_words = true;  // the files as the target names them
  return c;
}

CommandLine apply_manifest(const KubeTarget& t, const Manifest& m, bool server_side) {
  CommandLine c = kubectl(t, {"apply"});
  if (server_side) c.arg("--server-side");
  return c.arg("-f").arg(m.url);
}

CommandLine wait_deployments(const KubeTarget& t, const Manifest& m) {
  return kubectl(t, {"wait", "deployment", "--all", "-n"}).arg(m.ns).arg("--for=condition=available").arg("--timeout=300s");
}

CommandLine apply_addon_file(const KubeTarget& t, std::string_view file) {
  CommandLine c = kubectl(t, {"apply", "--server-side"});
  if (t.k8s_dir.empty()) return c.arg("-f").arg(file);
  c.shell_words = true;  // the file as the script finds it: beside its k8s/ folder
  c.words.push_back("-f");
  c.words.push_back(fmt::format("\"${{{}}}/../{}\"", t.k8s_dir, file));
  return c;
}

CommandLine annotate_pod_template(const KubeTarget& t, const std::string& ns, const std::string& name,
                                  const std::string& key, const std::string& value) {
  const nlohmann::json patch{{"spec", {{"template", {{"metadata", {{"annotations", {{key, value}}}}}}}}}};
  CommandLine c = kubectl(t, {"patch", "deployment/" + name, "-n", ns, "--type=merge"});
  return c.opt("--patch", patch.dump());
}

CommandLine rollout_status(const KubeTarget& t, const std::string& ns, const std::string& name, const std::string& timeout) {
  return kubectl(t, {"rollout", "status", "deployment/" + name, "-n", ns, "--timeout=" + timeout});
}

CommandLine port_forward(const KubeTarget& t, const std::string& ns, const std::string& service,
                         const std::vector<std::string>& ports) {
  CommandLine c = kubectl(t, {"port-forward", "-n", ns, "service/" + service});
  for (const auto& p : ports) c.arg(p);
  return c;
}

CommandLine load_balancer_ip(const KubeTarget& t, const std::string& service, const std::string& ns) {
  return kubectl(t, {"get", "service", service, "-n", ns, "-o", "jsonpath={.status.loadBalancer.ingress[0].ip}"});
}

CommandLine helm_install(const KubeTarget& t, const Operator& op) {
  CommandLine c = helm(t).arg("upgrade").arg("--install").arg(op.release).arg(op.chart);
  c.opt("--repo", op.repo).opt("--version", op.version).opt("--namespace", op.ns).flag("--create-namespace");
  return helm_context(c, t).flag("--wait");
}

CommandLine helm_uninstall(const KubeTarget& t, const Operator& op, bool wait) {
  CommandLine c = helm(t).arg("uninstall").arg(op.release);
  c.opt("--namespace", op.ns);
  helm_context(c, t);
  if (wait) c.flag("--wait");
  return c;
}

std::vector<CommandLine> state_bucket(const Gcp& g) {
  const std::string bucket = "gs://" + g.state->bucket;
  CommandLine create = gcloud({"storage", "buckets", "create", bucket});
  create.opt("--project", g.project).opt("--location", g.region).flag("--uniform-bucket-level-access");
  return {create, gcloud({"storage", "buckets", "update", bucket}).flag("--versioning")};
}

CommandLine project_number(const std::string& project_word) {
  return gcloud({"projects", "describe"}).word(project_word).opt("--format", "value(projectNumber)");
}

CommandLine enable_apis(const std::string& project, const std::vector<std::string>& services) {
  CommandLine c = gcloud({"services", "enable"});
  for (const auto& s : services) c.arg(s);
  return c.opt("--project", project);
}

CommandLine builds_submit(const std::string& config, const std::string& region, const std::string& substitutions) {
  CommandLine c = gcloud({"builds", "submit"});
  c.opt("--config", config).opt("--region", region).opt("--substitutions", substitutions);
  return c.flag(".");  // the source, after the flags
}

CommandLine region_quotas(const std::string& region_word, const std::string& project_word) {
  CommandLine c = gcloud({"compute", "regions", "describe"}).word(region_word);
  c.flag("--project", project_word).opt("--flatten", "quotas");
  return c.next_line().opt("--format", "csv[no-heading](quotas.metric,quotas.limit,quotas.usage)");
}

CommandLine storage_rsync(const std::string& from_word, const std::string& to) {
  // Explicit, whatever gcloud's default: a link is never followed out of the folder uploaded.
  CommandLine c = gcloud({"storage", "rsync", "--recursive", "--ignore-symlinks"});
  c.word(from_word);
  return c.arg(to);
}

CommandLine storage_ls(const std::string& url) { return gcloud({"storage", "ls"}).arg(url); }

CommandLine curl(const std::string& url_word, const std::string& host) {
  CommandLine c;
  c.spaced = true;
  c.arg("curl");
  if (!host.empty()) c.arg("-H").arg("Host: " + host);
  return c.word(url_word);
}

}  // namespace cmd
}  // namespace trainc
