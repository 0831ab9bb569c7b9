#include "commands/dask_command.h"

#include <algorithm>
#include <cmath>

#include "base/units.h"

namespace trainc::dask {

trainrt::Command scheduler(int port, int dashboard_port, const std::string& host) {
  trainrt::Command c{{"dask", "scheduler"}, {}};
  if (!host.empty()) c.flags.push_back({"host", {trainrt::lit(host)}});
  c.flags.push_back({"port", {trainrt::lit(std::to_string(port))}});
  c.flags.push_back({"dashboard-address", {trainrt::lit(host + ":" + std::to_string(dashboard_port))}});
  return c;
}

long long worker_memory_limit(const PodGroup& group) {
  auto it = group.resources.limits.find("memory");
  if (it == group.resources.limits.end()) return 0;
  const double bytes = parse_quantity(it->second).value_or(0);
  return static_cast<long long>(std::floor(bytes / std::max(1, group.gpus)));
}

trainrt::Command worker(const Dask& d, const PodGroup& group, const std::string& address, const std::string& host) {
  trainrt::Command c;
  c.words = group.gpus > 0 ? std::vector<std::string>{"dask", "cuda", "worker", address}
                           : std::vector<std::string>{"dask", "worker", address};
  c.flags.push_back({"name", {trainrt::env(kPodNameVar)}});
  int threads = d.threads;
  if (threads == 0 && group.gpus == 0) {
    auto it = group.resources.limits.find("cpu");
    const double cpus = it == group.resources.limits.end() ? 1 : parse_quantity(it->second).value_or(1);
    threads = std::max(1, static_cast<int>(std::floor(cpus)));
  }
  if (threads > 0) c.flags.push_back({"nthreads", {trainrt::lit(std::to_string(threads))}});
  if (long long mem = worker_memory_limit(group); mem > 0)
    c.flags.push_back({"memory-limit", {trainrt::lit(std::to_string(mem))}});
  // A worker whose scheduler is gone for a minute exits, and its Deployment starts a fresh one.
  c.flags.push_back({"death-timeout", {trainrt::lit("60")}});
  if (group.gpus > 0 && !d.rmm_pool_size.empty()) c.flags.push_back({"rmm-pool-size", {trainrt::lit(d.rmm_pool_size)}});
  if (!host.empty()) {
    c.flags.push_back({"host", {trainrt::lit(host)}});
    c.flags.push_back({"dashboard-address", {trainrt::lit(host + ":0")}});  // the worker's own, else on every interface
  }
  return c;
}

}  // namespace trainc::dask
