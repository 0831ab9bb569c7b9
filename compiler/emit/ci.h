#pragma once
// Generated CI pipelines (emit_ci.cpp): where they live and what they need from the project,
// shared with the runbook.
#include <string>
#include <vector>

#include "model/model.h"

namespace trainc {

/// The repository-relative paths the pipelines name (from System::origin, with '/').
struct CiPaths {
  std::string spec;      ///< the spec file
  std::string spec_dir;  ///< its folder ("." at the repository root)
  std::string out_root;  ///< the output root given to compile -o ("." when unknown)
  std::string out;       ///< the system's output folder, <out_root>/<system>
  std::string workflow;  ///< the GitHub workflow in the output folder: ci/.github/workflows/<system>.yaml
  std::string workflow_copy;  ///< where users copy it: .github/workflows/<system>.yaml
  /// `rel` (relative to the output folder) as a repository path.
  std::string in_out(const std::string& rel) const;
  /// A build's context (relative to the spec's folder) as a repository path.
  std::string context(const Build& b) const;
  /// The Dockerfile a build uses, as a repository path.
  std::string dockerfile(const Build& b) const;
};
CiPaths ci_paths(const System& sys);

/// The output-relative paths of the files the CI emitter writes.
std::string ci_workflow_file(const System& sys);
inline constexpr const char* kCloudBuildProvision = "ci/cloudbuild.provision.yaml";
inline constexpr const char* kCloudBuildDestroy = "ci/cloudbuild.destroy.yaml";

/// A role the CI service account needs, and why. `scope` is where it is granted: "" for the
/// project, a bucket (gs://NAME), or a service account (its email, with PROJECT_NUMBER standing
/// for the project's number).
struct CiRole {
  std::string role, why, scope;
  bool cloudbuild_only = false;  ///< only the Cloud Build service account needs it
};

/// The least-privilege roles a service account needs to run this system's CI (Terraform apply,
/// image pushes, scripts/apply.sh, the health check; for Cloud Build also enabling the APIs and
/// writing its logs), derived from what the system creates. Never roles/owner or roles/editor.
std::vector<CiRole> ci_roles(const System& sys);

/// The Google APIs the system uses, which Cloud Build's provision config enables.
std::vector<std::string> ci_apis(const System& sys);

/// The runbook's CI section (emit_ci_runbook.cpp): how to install the pipelines, their one-time
/// setup, and the roles their service account needs; "" without CI.
std::string ci_runbook_section(const System& sys);

}  // namespace trainc
