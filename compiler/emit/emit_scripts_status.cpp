// scripts/status.sh: shows the state of the GCP resources and the system's objects (emit_scripts.h).
#include <fmt/format.h>

#include "emit/emit_scripts.h"
#include "k8s/names.h"
#include "model/catalog.h"

namespace trainc::scripts {
namespace {

void status_gcp(ShellScript& sh, const System& sys) {
  Call cluster = cluster_call("describe");
  call(sh, cluster.flag("--format", lit("value(name,location,status,currentMasterVersion)")), "run",
       " || log 'cluster not found'");
  Call pools = gcloud({"container", "node-pools", "list"});
  pools.flag("--cluster", ref("CLUSTER"));
  call(sh, at(pools), "run", " || log 'no node pools found'");
  for (const Store* s : gcs_stores(sys))
    call(sh, bucket_call("describe", *s).flag("--format", lit("value(name,location)")), "run",
         fmt::format(" || log {}", lit(fmt::format("bucket gs://{} not found", s->bucket))));
  for (const Identity* id : sys.identities())
    call(sh, gsa_call("describe", *id).flag("--format", lit("value(email,disabled)")), "run",
         fmt::format(" || log {}", lit(fmt::format("service account {} not found", id->gsa))));
  if (const auto& r = sys.gcp->registry)
    call(sh, repository_call("describe", *r).flag("--format", lit("value(name,format)")), "run",
         fmt::format(" || log {}", lit(fmt::format("repository {} not found", r->repository))));
}

}  // namespace

std::string status_script(const System& sys) {
  ShellScript sh;
  prologue(sh, sys,
           {"status.sh", "shows the state",
            {"Shows the cluster, its node pools, the buckets, the service account and the",
             "system's Jobs and pods. Changes nothing."}},
           {}, {.gsa = sys.identity.has_value(), .ns = true, .kube = true});
  sh.line();
  sh.line("if [ \"$DRY_RUN\" = 1 ]; then log 'dry run: commands are printed, not run'; fi");
  status_gcp(sh, sys);
  std::string kinds = sys.services.empty() ? "jobs,pods" : "jobs,deployments,hpa,pods";
  for (const auto& st : sys.steps)  // TPU steps are JobSets
    if (const Pool* p = sys.pool(st.pool); p && p->tpu && kinds.find("jobsets") == std::string::npos)
      kinds = "jobsets," + kinds;
  // Each step's runs (the current one and the earlier ones apply.sh keeps) show their step and run.
  Call k = kubectl({"get", kinds, "-n", ref("NAMESPACE"), "-l", lit("app.kubernetes.io/part-of=" + sys.name), "-L",
                    lit(fmt::format("{},{}", k8s::kStepLabel, k8s::kRunLabel))});
  call(sh, k, "run", " || log 'cannot reach the cluster; run up.sh (or get-credentials) first'");
  if (!sys.services.empty()) {
    sh.comment("Which server pods each service sends requests to.");
    Call e = kubectl({"get", "endpointslices", "-n", ref("NAMESPACE"), "-l", lit("app.kubernetes.io/part-of=" + sys.name)});
    call(sh, e, "run", " || log 'no endpoints'");
  }
  if (sys.uses_gateway()) {
    const Operator& gw = catalog().istio_gateway();
    sh.comment("The ingress gateway's external address (EXTERNAL-IP).");
    call(sh, kubectl({"get", "service", lit(gw.release), "-n", lit(gw.ns)}), "run", " || log 'no ingress gateway found'");
  }
  return sh.text();
}

}  // namespace trainc::scripts
