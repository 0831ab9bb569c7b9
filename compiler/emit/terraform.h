#pragma once
// The Terraform target's files (emit_terraform.cpp, emit_terraform_iam.cpp): the helpers they
// share, and the bodies the IAM file writes.
#include <initializer_list>
#include <string>
#include <string_view>

#include "emit/hcl.h"
#include "model/model.h"

namespace trainc::tf {

/// The label of the google_container_cluster resource.
std::string cluster_label(const System& sys);
/// `TYPE.LABEL.ATTR` as a reference.
hcl::Value attr(std::string_view type, const std::string& label, std::string_view attribute);
/// `depends_on` the given APIs' google_project_service resources: creating a resource through an
/// API that is still off fails.
void depends_on_apis(hcl::Block& b, std::initializer_list<std::string_view> services);
bool any_autoscaled(const System& sys);
/// Whether trainc creates the Artifact Registry repository.
bool creates_registry(const System& sys);
/// The bucket's name: the created bucket's attribute, or the literal name of an existing bucket.
hcl::Value bucket_name(const Store& store);
/// The Google service account resource of an identity.
std::string service_account_label(const Identity& id);

/// The node service account's email, as a reference.
hcl::Value node_account_email(const System& sys);
/// iam.tf: the nodes' account and its roles, the workloads' accounts, their bucket roles and
/// Workload Identity bindings, and the metrics adapter's project role.
hcl::Body iam_tf(const System& sys);
/// registry.tf: the Artifact Registry repository built images are pushed to.
hcl::Body registry_tf(const System& sys);
/// The Artifact Registry repository's attribute, or what the spec says of an existing one.
hcl::Value registry_attr(const System& sys, std::string_view attribute, const std::string& literal);

}  // namespace trainc::tf
