#include "k8s/names.h"

#include <fmt/format.h>

#include "base/overloaded.h"
#include "base/sha256.h"
#include "common/fnv.h"

namespace trainc::k8s {

std::string step_base_name(const System& sys, const Step& step) { return fmt::format("{}-{}", sys.name, step.name); }

std::string job_name(const System& sys, const Step& step) {
  return step.run_id.empty() ? step_base_name(sys, step) : fmt::format("{}-{}", step_base_name(sys, step), step.run_id);
}

std::string planned_job_name(const System& sys, const Step& step) {
  return step.run_id.empty() ? fmt::format("{}-{}", step_base_name(sys, step), std::string(kHashLength, 'x'))
                             : job_name(sys, step);
}

std::string rdma_vpc(const System& sys) { return sys.cluster.name + "-rdma"; }
std::string rdma_subnet(const System& sys, int nic) { return fmt::format("{}-rdma-sub-{}", sys.cluster.name, nic); }
std::string rdma_network(int nic) { return fmt::format("rdma-{}", nic); }
std::string gvnic_vpc(const System& sys) { return sys.cluster.name + "-gvnic"; }
std::string gvnic_subnet(const System& sys) { return sys.cluster.name + "-gvnic-sub"; }
std::string gvnic_firewall(const System& sys) { return sys.cluster.name + "-gvnic-internal"; }

std::string cluster_name(const System& sys, const ComputeCluster& c) { return fmt::format("{}-{}", sys.name, c.name); }

std::string dask_scheduler_name(const System& sys, const ComputeCluster& c) { return cluster_name(sys, c) + "-scheduler"; }

std::string worker_group_name(const System& sys, const ComputeCluster& c, const PodGroup& g) {
  return cluster_name(sys, c) + "-" + g.name;
}

std::string ray_head_service(const System& sys, const ComputeCluster& c) { return cluster_name(sys, c) + "-head-svc"; }

std::vector<GeneratedName> cluster_names(const System& sys, const ComputeCluster& c) {
  std::vector<GeneratedName> out{{cluster_name(sys, c), "cluster name"}};
  match(
      c.engine, [](const Ray&) {},
      [&](const Dask&) { out.push_back({dask_scheduler_name(sys, c), "scheduler Deployment name"}); });
  for (const auto& g : c.workers) out.push_back({worker_group_name(sys, c, g), "worker group name"});
  return out;
}


std::string_view replicated_job(const System& sys, const Step& step) {
  const Pool* pool = sys.pool(step.pool);
  return pool && pool->tpu ? kSliceJob : kGangJob;
}

std::string jobset_coordinator(const System& sys, const Step& step) { return master_addr(sys, step); }

std::string service_name(const System& sys, const Service& s) { return fmt::format("{}-{}", sys.name, s.name); }

std::string scope_hash(std::initializer_list<std::string_view> parts) {
  std::string joined;
  for (const auto p : parts) (joined += p) += '\0';
  return sha256_hex(joined).substr(0, kScopeHashLength);
}

std::string cluster_queue_name(const System& sys) { return fmt::format("{}-{}", sys.name, scope_hash({sys.ns, sys.name})); }

std::string gateway_name(const System& sys) { return sys.name + "-gateway"; }

std::vector<GeneratedName> service_names(const System& sys, const Service& s) {
  return {{service_name(sys, s), "service name"}, {s.identity.ksa, "service account name"}};
}

namespace {
bool reads_as_number(std::string_view id) {
  const auto digits = [](std::string_view s, std::string_view set = "0123456789") {
    return !s.empty() && s.find_first_not_of(set) == std::string_view::npos;
  };
  if (digits(id)) return true;
  if (id.size() > 2 && id.substr(0, 2) == "0b" && digits(id.substr(2), "01")) return true;
  const auto e = id.find_first_of("eE");
  return e != std::string_view::npos && digits(id.substr(0, e)) && digits(id.substr(e + 1));
}
}  // namespace

std::string run_id(std::string_view hex_digest) {
  for (size_t at = 0; at + kHashLength <= hex_digest.size(); ++at)
    if (!reads_as_number(hex_digest.substr(at, kHashLength))) return std::string(hex_digest.substr(at, kHashLength));
  // A digest of digits and one "e" only: a letter of its own makes it a string.
  return "r" + std::string(hex_digest.substr(0, kHashLength - 1));
}

std::string content_hash(std::string_view data) {
  // A historical seed (kFnvOffset short of a digit), kept: another would rename every ConfigMap users have applied.
  const uint64_t h = common::fnv1a64(data, 1469598103934665603ULL);
  return fmt::format("{:016x}", h).substr(0, kHashLength);
}

std::string configmap_name(const System& sys, const Step& step) { return job_name(sys, step); }

std::string pod_hostname(const System& sys, const Step& step, int index) {
  if (runs_as_jobset(sys, step)) return fmt::format("{}-{}-0-{}", job_name(sys, step), replicated_job(sys, step), index);
  return fmt::format("{}-{}", job_name(sys, step), index);
}

std::string master_addr(const System& sys, const Step& step) {
  return fmt::format("{}.{}", pod_hostname(sys, step, 0), job_name(sys, step));
}

std::string mount_volume(const Mount& m) { return "gcs-" + m.store; }

std::vector<GeneratedName> step_names(const System& sys, const Step& step) {
  // ConfigMap names may run to 253 characters; only these are labels of at most 63.
  // A RayJob's name has KubeRay's shorter limit, and a JobSet's pods their own hostnames: the
  // operator checks (checks/operators.cpp) judge those.
  bool ray = false;
  if (const ComputeCluster* c = sys.compute_cluster(step.cluster))
    match(c->engine, [&](const Ray&) { ray = true; }, [](const Dask&) {});
  if (ray) return {};
  const Pool* pool = sys.pool(step.pool);
  const std::string job = planned_job_name(sys, step);
  std::vector<GeneratedName> out{{job, "Job name (also the value of its 'job-name' label)"}};
  if (step.distributed() && !(pool && pool->tpu) && !runs_as_jobset(sys, step)) {
    out.push_back({job, "headless Service name"});
    out.push_back({fmt::format("{}-{}", job, step.nodes - 1), "hostname of the last pod"});
  }
  return out;
}

}  // namespace trainc::k8s
