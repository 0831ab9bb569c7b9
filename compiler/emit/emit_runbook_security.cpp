// The runbook's Pod security section: the level each workload's pods meet, who they run as, and why.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/overloaded.h"
#include "emit/runbook.h"
#include "k8s/names.h"
#include "k8s/pod.h"
#include "model/catalog.h"
#include "model/placement.h"

namespace trainc {
namespace {

/// Text from the spec as Markdown shows it literally, where trainc puts it (inside a line: a table
/// cell, or after other text): control characters (a bare CR ends a line in CommonMark) become
/// spaces so no block (a heading, a code block) can start; `&` becomes an entity; and the characters
/// that open inline Markdown (emphasis, code, links, images, raw HTML, autolinks) are
/// backslash-escaped. `|` is left to cell(), which escapes it in tables.
std::string md_text(std::string_view text) {
  static constexpr std::string_view kInline = "\\`*_[]<>!~:";
  std::string out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) out += ' ';
    else if (ch == '&') out += "&amp;";
    else if (kInline.find(ch) != std::string_view::npos) out += {'\\', ch};
    else out += ch;
  }
  return out;
}

/// A Markdown table cell: `|` escaped, line breaks as spaces, "-" for nothing.
std::string cell(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|') out += "\\|";
    else out += ch == '\n' ? ' ' : ch;
  }
  return out.empty() ? "-" : out;
}

}  // namespace

/// The Pod Security Standard each workload's pods meet, and every pod that is not `restricted`:
/// trainc's own DaemonSets in other namespaces too. The reason the spec gives and what trainc found
/// the pods do stand in columns of their own.
std::string security_runbook_section(const System& sys, const k8s::Plan& plan) {
  struct Row {
    std::string what;
    std::vector<std::string> pods;  ///< the objects whose pods these are, as kubectl names them
    std::string level, runs_as, reason, need;  ///< reason: the spec's; need: what trainc found the pods do
  };
  std::vector<Row> rows;
  auto pods_of = [](const k8s::Workload* w, std::vector<std::string>& out) {
    if (w)
      for (const auto& o : w->objects)
        if (k8s::makes_pods(o.role)) out.push_back(fmt::format("`{}`", k8s::kubectl_ref(o)));
  };
  auto add = [&](std::string what, std::vector<std::string> pods, const std::string& image, const PodSecurity& sec,
                 const SecurityNeed& need, const Pool* pool = nullptr) {
    const int uid = k8s::needs_for(sys, pool, 0, "", nullptr, image, sec).uid;
    rows.push_back({std::move(what), std::move(pods), std::string(level_name(sec.level)),
                    sec.restricted()                   ? fmt::format("UID {}", uid)
                    : k8s::opens_tpu_as_root(pool, sec) ? std::string("root (UID 0)")
                    : uid                               ? fmt::format("the image's user ({})", uid)
                                                        : std::string("the image's user"),
                    sec.restricted() ? "" : md_text(sec.reason),
                    need.level == PodSecurityLevel::kRestricted ? "" : need.why});
  };
  for (const auto& st : sys.steps) {
    const ComputeCluster* c = sys.compute_cluster(st.cluster);
    if (c && !c->steps_have_own_pods()) continue;  // a RayJob: its pods are the Ray cluster's
    std::vector<std::string> pods;
    pods_of(plan.workload(st.name), pods);
    add(fmt::format("step `{}`", st.name), std::move(pods), st.image, st.security,
        security_need(sys.pool(st.pool), st.multislice()), sys.pool(st.pool));
  }
  for (const auto& [name, c] : sys.clusters) {
    std::vector<std::string> pods;
    pods_of(plan.cluster(name), pods);
    if (c.per_job())  // each RayJob on it brings the cluster's pods
      for (const auto& st : sys.steps)
        if (st.cluster == name) pods_of(plan.workload(st.name), pods);
    const Pool* pool = sys.pool(c.lead().pool);  // a TPU group's, whose pods run as root
    for (const auto& g : c.workers)
      if (const Pool* p = sys.pool(g.pool); p && p->tpu) pool = p;
    add(fmt::format("cluster `{}`", name), std::move(pods), c.image, c.security, security_need(sys, c), pool);
  }
  for (const auto& [name, sv] : sys.services) {
    std::vector<std::string> pods;
    for (const auto& w : plan.services)
      if (w.name == name) pods_of(&w, pods);
    add(fmt::format("service `{}`", name), std::move(pods), sv.image, sv.security, security_need(sys.pool(sv.pool), false),
        sys.pool(sv.pool));
    if (sys.istio) {  // the pods as they run: the mesh adds its sidecar at admission
      Row& r = rows.back();
      r.level += ", `privileged` with Istio's sidecar";
      r.need += fmt::format("{}Istio injects its sidecar, whose init container adds the NET_ADMIN and NET_RAW "
                            "capabilities (Istio's CNI plugin, which trainc does not install yet, would not)",
                            r.need.empty() ? "" : "; ");
    }
  }
  for (const auto& o : plan.shared)
    if (o.role == k8s::Role::kGibInstaller) {
      const SecurityNeed need = k8s::gib_installer_need(sys);
      rows.push_back({"trainc's gIB installer",
                      {fmt::format("`{}` in `{}`", k8s::kubectl_ref(o), k8s::kGibInstallerNamespace)},
                      std::string(level_name(need.level)), "the image's user", "", need.why});
    }
  // Heads that keep a service account token (Ray's autoscaler talks to the API), and whose.
  std::string tokens;
  for (const auto& [name, c] : sys.clusters) {
    if (!c.head_uses_api()) continue;
    const std::string account = sys.pod_service_account();
    tokens += fmt::format(
        "The head of cluster `{}` keeps a service account token: Ray's autoscaler beside it scales the worker groups "
        "through the Kubernetes API. {}\n\n",
        name,
        account.empty() ? std::string("It runs as the account KubeRay makes for it, with only the autoscaler's rights.")
        : sys.identity  ? fmt::format("It runs as `{}`, the account trainc makes for the system.", account)
                        : fmt::format("It runs as `{}`, an account trainc did not create; the spec accepts that "
                                      "because: {}",
                                      account, md_text(sys.service_account_token_reason)));
  }
  // Flags the server's own docs call risky, with the spec's reason for each.
  for (const auto& [name, svc] : sys.services)
    for (const auto& r : svc.accepted_risks())
      tokens += fmt::format("Service `{}` runs {} with `{}`, which {}; the spec accepts that because: {}\n\n", name,
                            svc.kind(), r.flag, r.what, md_text(r.reason));
  if (rows.empty() && tokens.empty()) return "";
  std::string md = "## Pod security\n\n";
  md += "Pods run under the Kubernetes *restricted* Pod Security Standard unless listed otherwise below: a non-root "
        "UID, no privilege escalation, every capability dropped, the RuntimeDefault seccomp profile, and no service "
        "account token unless the pod talks to the Kubernetes API. A pod whose UID the image's `/etc/passwd` does "
        "not name (an image trainc neither builds nor knows from `stdlib/images.yaml`) gets `HOME=/tmp` and "
        "`USER=LOGNAME=trainc`, so caches have a writable home and Python's `getpass` finds a name; "
        "and the folders its step syncs inputs to or writes outputs and checkpoints in are emptyDir volumes, since "
        "the image may not let that UID write there; steps that run trainrt keep a read-only root file system. A "
        "workload that cannot run so says why in its spec (`security:`); the table gives that reason and, apart "
        "from it, what trainc found its pods do that needs the level.\n\n";
  if (sys.owns_namespace) {
    md += fmt::format("The namespace `{}` enforces `{}` (the strictest level all its pods meet) and warns and audits at "
                      "`restricted`, so each exception below in it shows up in `kubectl` warnings and the audit log.",
                      sys.ns, level_name(k8s::namespace_level(sys)));
    if (sys.istio && !sys.services.empty())
      md += " Istio injects a sidecar whose init container needs the NET_ADMIN and NET_RAW capabilities, which only "
            "`privileged` allows; Istio's CNI plugin would lift that, and trainc does not install it yet.";
    md += "\n\n";
  }
  md += tokens;
  if (rows.empty()) return md;
  md += "| workload | pods of | level | runs as | reason given in the spec | what its pods do that needs it |\n"
        "|---|---|---|---|---|---|\n";
  for (const auto& r : rows)
    md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", r.what, cell(fmt::format("{}", fmt::join(r.pods, ", "))),
                      r.level, r.runs_as, cell(r.reason), cell(r.need));
  return md + "\n";
}


}  // namespace trainc
