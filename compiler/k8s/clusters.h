#pragma once
// What a long-lived compute cluster becomes in Kubernetes: the Dask scheduler's Service and
// Deployment and one worker Deployment per group, or a KubeRay RayCluster; and a step submitted
// to a Ray cluster as a RayJob. Object names and files come from the plan (k8s/plan.h).
#include <string>

#include "k8s/plan.h"
#include "k8s/pod.h"

namespace trainc::k8s {

/// tcp://<scheduler service>:8786, what Dask clients and workers connect to.
std::string dask_scheduler_address(const System& sys, const ComputeCluster& c);

ojson dask_service(const System& sys, const ComputeCluster& c, const Object& obj);
ojson dask_scheduler(const System& sys, const ComputeCluster& c, const Object& obj);
ojson dask_workers(const System& sys, const ComputeCluster& c, const Object& obj);
ojson ray_cluster(const System& sys, const ComputeCluster& c, const Object& obj);
/// A step on a Ray cluster: its command as the entrypoint, its env as the runtime env.
ojson ray_job(const System& sys, const Step& step, const Object& obj);
/// The RayJob's spec.entrypoint for `step` (a command on a Ray cluster): the string Ray's job
/// supervisor runs with `sh -c` under the submission mode trainc asks for.
std::string ray_job_entrypoint(const Step& step);
/// The RayJob's runtime environment for `step`: its env as env_vars; null when it has none.
ojson ray_job_runtime_env(const Step& step);

}  // namespace trainc::k8s
