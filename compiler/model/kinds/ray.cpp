// Ray's facts (EngineFacts): the head leads, and KubeRay adds the autoscaler beside it.
#include <algorithm>

#include "model/model.h"

namespace trainc {
namespace {

bool any_autoscaled(const std::vector<PodGroup>& workers) {
  return std::any_of(workers.begin(), workers.end(), [](const PodGroup& g) { return g.autoscaled(); });
}

}  // namespace

// With enableInTreeAutoscaling, KubeRay appends an `autoscaler` container to the head pod, with
// 500m CPU and 512Mi as requests and limits unless autoscalerOptions.resources says otherwise
// (kuberay v1.7.0 ray-operator/controllers/ray/common/pod.go, BuildAutoscalerContainer).
std::vector<AddedContainer> Ray::added_containers(const std::vector<PodGroup>& workers) const {
  std::vector<AddedContainer> out;
  // Every worker waits for the head's GCS in an init container KubeRay adds with fixed resources
  // (v1.7.0 common/pod.go, the `wait-gcs-ready` container of DefaultWorkerPodTemplate).
  const std::map<std::string, std::string> wait{{"cpu", "200m"}, {"memory", "256Mi"}};
  for (const auto& g : workers) out.push_back({"wait-gcs-ready", g.name, wait, wait, true});
  if (!any_autoscaled(workers)) return out;
  const std::map<std::string, std::string> resources{{"cpu", "500m"}, {"memory", "512Mi"}};
  out.push_back({"autoscaler", std::string(kLead), resources, resources, false});
  return out;
}

// The autoscaler scales worker groups through the API, with the head pod's token.
bool Ray::lead_uses_api(const std::vector<PodGroup>& workers) const { return any_autoscaled(workers); }

}  // namespace trainc
