// The runbook's way to follow a RayJob. KubeRay submits it to the head's job API (HTTPMode,
// k8s/clusters.cpp): no Job or submitter pod exists, so its state is the RayJob's status and its
// output is in Ray's job logs on the head, read there with `ray job logs` by the submission id
// KubeRay records (RayJob status.jobId; KubeRay v1.7.0 docs, RayJob quick start).
#include <fmt/format.h>

#include "emit/runbook.h"
#include "k8s/names.h"

namespace trainc {

std::string ray_job_watch(const System& sys, const Step& st, const k8s::Object& done) {
  const KubeTarget kube = runbook_target();
  const std::string& ns = sys.ns;
  const ComputeCluster& c = *sys.compute_cluster(st.cluster);
  auto status = [&](std::string_view field) {
    return cmd::kubectl(kube, {"get", "rayjob", "-n", ns, done.name, "-o", fmt::format("jsonpath={{.status.{}}}", field)})
        .line();
  };
  CommandLine logs = cmd::kubectl(kube, {"exec", "-n", ns});
  // A per-job cluster's name is KubeRay's to choose; the RayJob's status records it.
  if (c.per_job()) logs.word("\"service/$(" + status("rayClusterName") + ")-head-svc\"");
  else logs.arg("service/" + k8s::ray_head_service(sys, c));
  logs.arg("--").arg("ray").arg("job").arg("logs").arg("--address").arg("http://127.0.0.1:8265").arg("--follow");
  logs.word("\"$(" + status("jobId") + ")\"");
  return cmd::kubectl(kube, {"get", "rayjob", "-n", ns, done.name, "-w"}).line() + "\n" + logs.line();
}

std::string ray_job_watch_note() {
  return "A step on a Ray cluster is a RayJob that KubeRay submits to the head's job API (`submissionMode: HTTPMode`): "
         "it makes no Job and no submitter pod, so there is no Job whose logs to read. The RayJob's `status.jobStatus` "
         "and `status.jobDeploymentStatus` say where it stands, and the job's output is in Ray's job logs on the head "
         "(`ray job logs` with the submission id KubeRay records in `status.jobId`; the head pod's own log shows the "
         "cluster, not the job).\n\n";
}

}  // namespace trainc
