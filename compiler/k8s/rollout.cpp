#include "k8s/rollout.h"

#include <set>
#include <utility>

namespace trainc {

std::size_t Rollout::services_end() const {
  std::size_t i = 0;
  while (i < steps.size() && steps[i].kind != RolloutStep::Kind::kWorkload) ++i;
  return i;
}

namespace {

RolloutStep install(Addon addon, std::vector<const Operator*> charts, const Manifest* manifest = nullptr,
                    bool controller = false) {
  RolloutStep s{RolloutStep::Kind::kInstall};
  s.addon = addon;
  s.charts = std::move(charts);
  s.manifest = manifest;
  s.controller = controller;
  return s;
}

RolloutStep apply(RolloutStep::Kind kind, const k8s::Workload& w) {
  RolloutStep s{kind};
  s.workload = &w;
  for (const auto& o : w.objects) s.files.push_back(o.file);
  return s;
}

}  // namespace

std::vector<RegistryImage> registry_images(const System& sys) {
  if (!sys.gcp) return {};
  std::set<std::string> named;
  for (const auto& s : sys.steps) named.insert(s.image);
  for (const auto& [_, c] : sys.clusters) named.insert(c.image);
  for (const auto& [_, s] : sys.services) named.insert(s.image);
  std::vector<RegistryImage> out;
  for (const auto& image : named) {
    const std::size_t host_end = image.find('/');
    if (host_end == std::string::npos || !std::string_view(image).substr(0, host_end).ends_with("-docker.pkg.dev"))
      continue;
    RegistryImage i{image};
    for (const auto& [_, b] : sys.builds)
      if (b.image == image) i.build = &b;
    i.runtime = !i.build && image == sys.runtime_image;
    out.push_back(std::move(i));
  }
  return out;
}

Rollout make_rollout(const System& sys, const k8s::Plan& plan) {
  using Kind = RolloutStep::Kind;
  const Catalog& cat = catalog();
  Rollout r;
  // The images before anything: a pod whose image was never pushed waits in ImagePullBackOff.
  if (auto images = registry_images(sys); !images.empty()) {
    RolloutStep s{Kind::kImages};
    s.images = std::move(images);
    r.steps.push_back(std::move(s));
  }
  // Operators and controllers first: their CRDs and webhooks before any object of their kinds,
  // Istio's injector before any pod.
  if (plan.needs_istio) {
    std::vector<const Operator*> charts{&cat.istio_base(), &cat.istiod()};
    if (sys.uses_gateway()) charts.push_back(&cat.istio_gateway());
    r.steps.push_back(install(Addon::kIstio, std::move(charts)));
  }
  if (plan.needs_kuberay) r.steps.push_back(install(Addon::kKubeRay, {&cat.kuberay()}));
  if (plan.needs_metrics_adapter) r.steps.push_back(install(Addon::kMetricsAdapter, {}, &cat.metrics_adapter()));
  // JobSet's controller before Kueue's: Kueue sets up its JobSet integration when it starts if the
  // JobSet CRD is served then, and otherwise polls for it with a back-off of up to 2 minutes
  // (kubernetes-sigs/kueue@8eab687 pkg/controller/jobframework/setup.go: WaitForAPI,
  // maxBackoffWaitForIntegration), during which a queued JobSet waits unadmitted. No restart is needed
  // either way; this order spares the wait.
  if (plan.needs_jobset) r.steps.push_back(install(Addon::kJobSet, {}, &cat.jobset(), true));
  if (plan.needs_kueue) r.steps.push_back(install(Addon::kKueue, {}, &cat.kueue(), true));
  if (!plan.shared.empty()) {
    RolloutStep s{Kind::kShared};
    for (const auto& o : plan.shared) s.files.push_back(o.file);
    r.steps.push_back(std::move(s));
  }
  for (const auto& w : plan.clusters) r.steps.push_back(apply(Kind::kCluster, w));
  // A service that serves steps' output (its `needs`) comes after the pipeline, once they are done.
  bool serves_steps = false;
  std::set<std::string> waited;
  auto service = [&](const k8s::Workload& w) {
    std::vector<const k8s::Object*> waits;
    for (const auto& need : w.needs)
      if (const k8s::Workload* dep = plan.workload(need))
        if (waited.insert(need).second && dep->done().ready != k8s::Ready::kApplied) waits.push_back(&dep->done());
    bool contents = false;
    for (const StoreContents& c : w.service->store_contents()) contents = contents || c.source || !c.needs.empty();
    if (contents) {
      RolloutStep s{Kind::kContents};
      s.workload = &w;
      s.waits = std::exchange(waits, {});  // what it looks for is what the steps wrote
      r.steps.push_back(std::move(s));
    }
    RolloutStep s = apply(Kind::kService, w);
    s.waits = std::move(waits);
    r.steps.push_back(std::move(s));
  };
  for (const auto& w : plan.services) {
    if (w.needs.empty())
      service(w);
    else
      serves_steps = true;
  }
  if (!plan.services.empty() && !serves_steps) r.steps.push_back(RolloutStep{Kind::kHealth});
  for (const auto& w : plan.workloads) {
    RolloutStep s = apply(Kind::kWorkload, w);
    auto wait = [&](const k8s::Object& done, const std::string& key) {
      if (waited.insert(key).second && done.ready != k8s::Ready::kApplied) s.waits.push_back(&done);
    };
    if (const k8s::Workload* c = plan.cluster(w.on)) wait(c->done(), "cluster " + w.on);
    for (const auto& need : w.needs)
      if (const k8s::Workload* dep = plan.workload(need)) wait(dep->done(), need);
    r.steps.push_back(std::move(s));
  }
  if (serves_steps) {
    for (const auto& w : plan.services)
      if (!w.needs.empty()) service(w);
    r.steps.push_back(RolloutStep{Kind::kHealth});
  }

  // Teardown: the gateway's load balancer first, released by the cluster that made it; then the
  // objects; then the charts, KubeRay's once no RayCluster is left; the infrastructure last.
  using Down = TeardownStep::Kind;
  if (plan.needs_istio && sys.uses_gateway()) r.teardown.push_back({Down::kReleaseLoadBalancer, &cat.istio_gateway()});
  r.teardown.push_back({Down::kDeleteObjects});
  if (plan.needs_istio) {
    r.teardown.push_back({Down::kUninstall, &cat.istiod()});
    r.teardown.push_back({Down::kUninstall, &cat.istio_base()});
  }
  if (plan.needs_kuberay) r.teardown.push_back({Down::kUninstall, &cat.kuberay()});
  r.teardown.push_back({Down::kInfrastructure});
  return r;
}

}  // namespace trainc
