// The Terraform target's IAM (terraform.h): iam.tf with the nodes' service account and its
// roles, each workload identity with its bucket roles and Workload Identity binding, the metrics
// adapter's project role; and registry.tf, the repository built images are pushed to.
#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "emit/terraform.h"
#include "model/catalog.h"

namespace trainc::tf {
namespace {

using hcl::Block;
using hcl::Body;
using hcl::Value;

Value gsa_member(const Identity& id) {
  return hcl::templ({hcl::str("serviceAccount:"), attr("google_service_account", service_account_label(id), "email")});
}

/// The last part of a role, lower-cased: roles/storage.objectViewer -> objectviewer.
std::string role_short_name(const std::string& role) {
  std::string out = role.substr(role.find_last_of("./") + 1);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

/// The label of a grant's google_storage_bucket_iam_member. The system identity's is the store's
/// name, as before services existed, so existing state keeps its addresses; a service's adds the
/// service and the role, since a service holds two roles on one bucket. Labels joined from names
/// can still meet (store a-b with service c, store a with service b-c): the later one gets a suffix.
std::string grant_label(const Identity& id, const BucketGrant& grant, std::set<std::string>& taken) {
  const std::string label = id.of.empty() ? hcl::identifier(grant.store)
                                          : hcl::identifier(fmt::format("{}_{}_{}", grant.store, id.of,
                                                                        role_short_name(grant.role)));
  std::string out = label;
  for (int n = 2; !taken.insert(out).second; ++n) out = fmt::format("{}_{}", label, n);
  return out;
}

void bucket_grant(Body& file, const System& sys, const Identity& id, const BucketGrant& grant,
                  std::set<std::string>& taken) {
  Block& m = file.block("resource", {"google_storage_bucket_iam_member", grant_label(id, grant, taken)});
  m.set("bucket", bucket_name(sys.stores.at(grant.store)));
  m.set("role", hcl::str(grant.role));
  m.set("member", gsa_member(id));
}

void depends_on_pool(Block& b, const System& sys) {
  b.comment("The identity pool PROJECT.svc.id.goog exists once a cluster that uses it does.");
  b.set("depends_on", hcl::list({hcl::ref("google_container_cluster." + cluster_label(sys))}));
}

void workload_identity_binding(Body& file, const System& sys, const Identity& id) {
  file.comment(fmt::format("The Kubernetes service account {}/{} may act as the Google service account.", sys.ns, id.ksa));
  const std::string label = id.of.empty() ? "workload_identity" : "workload_identity_" + hcl::identifier(id.of);
  Block& b = file.block("resource", {"google_service_account_iam_member", label});
  b.set("service_account_id", attr("google_service_account", service_account_label(id), "name"));
  b.set("role", hcl::str("roles/iam.workloadIdentityUser"));
  b.set("member", hcl::templ({hcl::str("serviceAccount:"), hcl::ref("var.project_id"),
                              hcl::str(fmt::format(".svc.id.goog[{}/{}]", sys.ns, id.ksa))}));
  depends_on_pool(b, sys);
}

/// The Custom Metrics Stackdriver Adapter's own Kubernetes service account, as a Workload
/// Identity Federation principal: it gets a role directly, with no Google service account.
void metrics_adapter_role(Body& file, const System& sys) {
  const Manifest& adapter = catalog().metrics_adapter();
  file.comment("The Custom Metrics Stackdriver Adapter reads the services' queue metric from Cloud Monitoring for\n"
               "their HorizontalPodAutoscalers; read-only, and with the nodes' role the only project-level roles\n"
               "trainc grants.");
  Block& m = file.block("resource", {"google_project_iam_member", "metrics_adapter"});
  m.set("project", hcl::ref("var.project_id"));
  m.set("role", hcl::str("roles/monitoring.viewer"));
  m.set("member", hcl::templ({hcl::str("principal://iam.googleapis.com/projects/"),
                              hcl::ref("data.google_project.this.number"),
                              hcl::str("/locations/global/workloadIdentityPools/"), hcl::ref("var.project_id"),
                              hcl::str(fmt::format(".svc.id.goog/subject/ns/{}/sa/{}", adapter.ns,
                                                   adapter.service_account))}));
  depends_on_pool(m, sys);
}


std::string node_account_label(const System& sys) { return hcl::identifier(trainc::node_account(sys).id); }

/// The nodes' read on one repository. The system's own is named by its resource when trainc
/// creates it, so the grant follows the repository; any other by what the image names.
void repository_reader(Body& file, const System& sys, const PulledRepository& repo, std::set<std::string>& taken) {
  const std::string label = repo.own ? "node_reader"
                                     : hcl::identifier(fmt::format("node_reader_{}_{}", repo.project, repo.repository));
  std::string unique = label;
  for (int n = 2; !taken.insert(unique).second; ++n) unique = fmt::format("{}_{}", label, n);
  Block& m = file.block("resource", {"google_artifact_registry_repository_iam_member", unique});
  if (repo.own) {
    m.set("project", creates_registry(sys) ? registry_attr(sys, "project", "") : hcl::ref("var.project_id"));
    m.set("location", registry_attr(sys, "location", repo.location));
    m.set("repository", registry_attr(sys, "name", repo.repository));
  } else {
    m.set("project", hcl::str(repo.project));
    m.set("location", hcl::str(repo.location));
    m.set("repository", hcl::str(repo.repository));
  }
  m.set("role", hcl::str("roles/artifactregistry.reader"));
  m.set("member", hcl::templ({hcl::str("serviceAccount:"), node_account_email(sys)}));
}

/// The nodes' own account: GKE's least-privilege node role on the project, and read on each
/// repository the pods pull from.
void node_account(Body& file, const System& sys) {
  const NodeAccount nodes = trainc::node_account(sys);
  file.comment(fmt::format("The nodes of cluster {} run as this account, not the Compute Engine default one, whose\n"
                           "automatic Editor role organisations may block.",
                           nodes.cluster));
  Block& sa = file.block("resource", {"google_service_account", node_account_label(sys)});
  sa.set("account_id", hcl::str(nodes.id));
  sa.set("display_name", hcl::str(nodes.display_name()));
  depends_on_apis(sa, {"iam.googleapis.com"});
  file.comment("GKE's least-privilege role for nodes: logs, metrics and what the node agents need; no data.");
  Block& role = file.block("resource", {"google_project_iam_member", "nodes"});
  role.set("project", hcl::ref("var.project_id"));
  role.set("role", hcl::str("roles/container.defaultNodeServiceAccount"));
  role.set("member", hcl::templ({hcl::str("serviceAccount:"), node_account_email(sys)}));
  depends_on_apis(role, {"cloudresourcemanager.googleapis.com"});
  if (nodes.repositories.empty()) return;
  file.comment("The nodes pull the pods' images: read on each repository they come from, never on the project.");
  std::set<std::string> taken;
  for (const PulledRepository& repo : nodes.repositories) repository_reader(file, sys, repo, taken);
}

}  // namespace

Value node_account_email(const System& sys) {
  return attr("google_service_account", node_account_label(sys), "email");
}

Body iam_tf(const System& sys) {
  Body file;
  node_account(file, sys);
  std::set<std::string> grant_labels;
  for (const Identity* id : sys.identities()) {
    // Created here, never adopted: an existing account of that id fails the apply (409) until imported.
    Block& sa = file.block("resource", {"google_service_account", service_account_label(*id)});
    sa.set("account_id", hcl::str(id->gsa));
    sa.set("display_name", hcl::str(id->display_name(sys.name)));
    sa.set("description", hcl::str(id->description(sys.name)));
    depends_on_apis(sa, {"iam.googleapis.com"});
    if (!id->grants.empty())
      file.comment(id->of.empty() ? "Roles on each bucket, never on the project."
                                  : "Roles on the service's buckets only, never on the project.");
    for (const BucketGrant& g : id->grants) bucket_grant(file, sys, *id, g, grant_labels);
    workload_identity_binding(file, sys, *id);
  }
  if (any_autoscaled(sys)) metrics_adapter_role(file, sys);
  return file;
}

Value registry_attr(const System& sys, std::string_view attribute, const std::string& literal) {
  const Registry& r = *sys.gcp->registry;
  return r.create ? attr("google_artifact_registry_repository", hcl::identifier(r.repository), attribute)
                  : hcl::str(literal);
}

Body registry_tf(const System& sys) {
  const Registry& r = *sys.gcp->registry;
  const std::string label = hcl::identifier(r.repository);
  Body file;
  Block& repo = file.block("resource", {"google_artifact_registry_repository", label});
  repo.set("project", hcl::ref("var.project_id"));
  repo.comment("Fixed, not var.region: the manifests name images by this location's host.");
  repo.set("location", hcl::str(r.location));
  repo.set("repository_id", hcl::str(r.repository));
  repo.set("format", hcl::str("DOCKER"));
  repo.set("description", hcl::str(fmt::format("Images of trainc system {}", sys.name)));
  depends_on_apis(repo, {"artifactregistry.googleapis.com"});
  return file;
}


}  // namespace trainc::tf
