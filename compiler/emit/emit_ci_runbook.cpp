// The runbook's CI section (README.md, emit_runbook.cpp): how to install the pipelines emit_ci.cpp
// writes, their one-time setup, and the roles their service account needs.
#include <algorithm>

#include <fmt/format.h>

#include "emit/ci.h"
#include "emit/shell.h"

namespace trainc {
namespace {

/// The part of a Workload Identity provider's name after `key/` ("" when absent).
std::string provider_part(const std::string& provider, const std::string& key) {
  const std::string mark = key + "/";
  size_t at = provider.find(mark);
  if (at == std::string::npos) return "";
  at += mark.size();
  return provider.substr(at, provider.find('/', at) - at);
}

/// The project of a service account's email (id@PROJECT.iam.gserviceaccount.com), else "".
std::string account_project(const std::string& email) {
  const std::string suffix = ".iam.gserviceaccount.com";
  const size_t at = email.find('@');
  if (at == std::string::npos || !email.ends_with(suffix)) return "";
  return email.substr(at + 1, email.size() - suffix.size() - at - 1);
}
}  // namespace

/// How to install the CI pipelines, the one-time setup, and the roles their service account needs.
std::string ci_runbook_section(const System& sys) {
  if (!sys.ci || !sys.gcp || !sys.gcp->state) return "";
  const Gcp& gcp = *sys.gcp;
  std::string md = "## CI\n\n";
  if (!sys.origin.outside_repository.empty())
    return md + "The spec asks for CI pipelines, but they were not written: this folder was compiled outside the git "
                "work tree that holds the spec, and a pipeline can only name paths inside its repository. Compile "
                "the spec into a folder of its repository to get them.\n\n";
  const CiPaths p = ci_paths(sys);
  const bool zonal = !gcp.zone.empty();
  md += "The pipelines refer to the spec and this folder by their paths in the repository (spec `" + p.spec +
        "`, output `" + p.out + "`); run them from the repository root.\n\n";
  if (sys.ci->github) {
    const GithubCi& gh = *sys.ci->github;
    md += fmt::format(
        "**GitHub Actions** (`{0}`). Install it by copying it into the repository's workflows and committing "
        "both; the `check` job fails while the copy differs from what trainc generated:\n\n```sh\n"
        "mkdir -p .github/workflows\ncp {1} {2}\n```\n\n"
        "On pull requests to `{3}` it runs `trainc diff` (the committed output is what the spec compiles to), "
        "`terraform fmt -check`, `terraform plan` and the image builds; on pushes to `{3}` it pushes the images, "
        "runs `terraform apply` and `scripts/apply.sh --services-only` (one deploy at a time){4}. A run started "
        "by hand (workflow_dispatch) with `run_pipeline` also runs `scripts/apply.sh` in full, starting the "
        "pipeline's steps.\n\n",
        ci_workflow_file(sys), p.workflow, p.workflow_copy, gh.branch,
        gh.environment.empty() ? "" : fmt::format(", in the GitHub environment `{}`", gh.environment));
  }
  if (sys.ci->cloudbuild) {
    std::string subs = fmt::format("_REGION={}", gcp.region);
    if (zonal) subs += ",_ZONE=" + gcp.zone;
    subs += fmt::format(",_TF_STATE_BUCKET={},_TF_STATE_PREFIX={}", gcp.state->bucket, gcp.state->prefix);
    md += fmt::format(
        "**Cloud Build** (`{}`, `{}`): provision enables the APIs, runs Terraform against the remote state, builds "
        "the images, applies the shared objects and services with `scripts/apply.sh --services-only`{}; destroy "
        "deletes the Kubernetes objects first (so the gateway's load balancer is released) and then runs "
        "`terraform destroy`. Submit them from the repository root; the substitutions default to the spec's "
        "values:\n\n```sh\n"
        "gcloud builds submit --config={} --region={} --substitutions={} .\n"
        "gcloud builds submit --config={} --region={} --substitutions={} .\n```\n\n",
        kCloudBuildProvision, kCloudBuildDestroy,
        sys.services.empty() ? "" : " and runs `scripts/health.sh`", p.in_out(kCloudBuildProvision), gcp.region,
        subs, p.in_out(kCloudBuildDestroy), gcp.region, subs);
  }

  md += "### One-time setup\n\n";
  md += fmt::format("The Terraform state bucket, with object versioning, and the APIs:\n\n```sh\n"
                    "gcloud storage buckets create gs://{0} --project={1} --location={2} --uniform-bucket-level-access\n"
                    "gcloud storage buckets update gs://{0} --versioning\n"
                    "gcloud services enable {3} --project={1}\n```\n\n",
                    gcp.state->bucket, gcp.project, gcp.region, fmt::join(ci_apis(sys), " "));
  if (sys.ci->github) {
    const GithubCi& gh = *sys.ci->github;
    const std::string number = provider_part(gh.provider, "projects");
    const std::string pool = provider_part(gh.provider, "workloadIdentityPools");
    const std::string provider = provider_part(gh.provider, "providers");
    const std::string sa_project = account_project(gh.service_account);
    md += fmt::format(
        "GitHub signs in with Workload Identity Federation (no keys). Create the pool and its GitHub provider in "
        "the project numbered {0}, limited to your repository (replace OWNER/REPO), and let the repository's "
        "workflows impersonate `{1}`:\n\n```sh\n"
        "gcloud iam workload-identity-pools create {2} --project={3} --location=global --display-name='GitHub Actions'\n"
        "gcloud iam workload-identity-pools providers create-oidc {4} --project={3} --location=global \\\n"
        "  --workload-identity-pool={2} --issuer-uri=https://token.actions.githubusercontent.com \\\n"
        "  --attribute-mapping=google.subject=assertion.sub,attribute.repository=assertion.repository,"
        "attribute.ref=assertion.ref \\\n"
        "  --attribute-condition=\"assertion.repository == 'OWNER/REPO'\"\n",
        number, gh.service_account, pool, gcp.project, provider);
    if (!sa_project.empty())
      md += fmt::format("gcloud iam service-accounts create {} --project={} --display-name='trainc CI for {}'\n",
                        gh.service_account.substr(0, gh.service_account.find('@')), sa_project, sys.name);
    const std::string principals =
        fmt::format("principalSet://iam.googleapis.com/projects/{}/locations/global/workloadIdentityPools/{}/", number, pool);
    if (gh.plan_service_account.empty()) {
      md += fmt::format(
          "gcloud iam service-accounts add-iam-policy-binding {} --role=roles/iam.workloadIdentityUser \\\n"
          "  --member={}attribute.repository/OWNER/REPO\n```\n\n",
          gh.service_account, principals);
      md += "Pull requests' `terraform plan` runs as this deployer too, so code on any branch of the repository "
            "acts with its roles before review. Set `ci.github.planServiceAccount` to a read-only account to "
            "bind the deployer to pushes to the deploy branch alone.\n\n";
    } else {
      const std::string plan_project = account_project(gh.plan_service_account);
      if (!plan_project.empty())
        md += fmt::format("gcloud iam service-accounts create {} --project={} --display-name='trainc CI plans for {}'\n",
                          gh.plan_service_account.substr(0, gh.plan_service_account.find('@')), plan_project, sys.name);
      md += fmt::format(
          "# The deployer: only workflows running on refs/heads/{0}.\n"
          "gcloud iam service-accounts add-iam-policy-binding {1} --role=roles/iam.workloadIdentityUser \\\n"
          "  --member={2}attribute.ref/refs/heads/{0}\n"
          "# The planner: any workflow of the repository; it may read, not change.\n"
          "gcloud iam service-accounts add-iam-policy-binding {3} --role=roles/iam.workloadIdentityUser \\\n"
          "  --member={2}attribute.repository/OWNER/REPO\n"
          "gcloud projects add-iam-policy-binding {4} --member={5} --role=roles/viewer --condition=None\n"
          "gcloud projects add-iam-policy-binding {4} --member={5} --role=roles/iam.securityReviewer --condition=None\n"
          "gcloud storage buckets add-iam-policy-binding gs://{6} --member={5} --role=roles/storage.objectViewer\n"
          "```\n\n",
          gh.branch, gh.service_account, principals, gh.plan_service_account, gcp.project,
          sh_quote("serviceAccount:" + gh.plan_service_account), gcp.state->bucket);
      md += fmt::format("Pull requests plan as `{}` (read-only: `roles/viewer`, `roles/iam.securityReviewer` to read "
                        "IAM policies, and the state bucket's objects; the plan runs with `-lock=false`); only pushes "
                        "to `{}` may act as the deployer.\n\n",
                        gh.plan_service_account, gh.branch);
    }
    md += "The provider's project number is the one in `workloadIdentityProvider`; `gcloud projects describe "
          "PROJECT --format='value(projectNumber)'` prints it.\n\n";
  }
  // Each CI service account, and whether Cloud Build runs as it.
  std::vector<std::pair<std::string, bool>> accounts;
  if (sys.ci->github) accounts.emplace_back(sys.ci->github->service_account, false);
  if (sys.ci->cloudbuild) {
    std::string account = sys.ci->cloudbuild->service_account;
    if (account.empty()) {
      md += "Cloud Build runs as the project's default Cloud Build service account (`gcloud builds "
            "get-default-service-account` names it); grant it the roles below, or set "
            "`ci.cloudbuild.serviceAccount`.\n\n";
      account = "CLOUD_BUILD_SERVICE_ACCOUNT";
    }
    auto same = std::find_if(accounts.begin(), accounts.end(), [&](const auto& a) { return a.first == account; });
    if (same != accounts.end()) same->second = true;
    else accounts.emplace_back(account, true);
  }

  md += "### Roles of the CI service account\n\n"
        "Derived from what this system creates: no more than these, and never roles/owner or roles/editor "
        "(which seed recipes grant). PROJECT_NUMBER is the project's number.\n\n"
        "| role | on | why |\n|---|---|---|\n";
  const auto roles = ci_roles(sys);
  for (const auto& r : roles)
    md += fmt::format("| `{}` | {} | {}{} |\n", r.role, r.scope.empty() ? "the project" : "`" + r.scope + "`", r.why,
                      r.cloudbuild_only ? " (Cloud Build only)" : "");
  md += fmt::format("\n```sh\nPROJECT_NUMBER=$(gcloud projects describe {} --format='value(projectNumber)')\n",
                    gcp.project);
  for (const auto& [account, cloudbuild] : accounts) {
    const std::string member = "--member=" + sh_quote("serviceAccount:" + account);
    for (const auto& r : roles) {
      if (r.cloudbuild_only && !cloudbuild) continue;
      if (r.scope.empty())
        md += fmt::format("gcloud projects add-iam-policy-binding {} {} --role={} --condition=None\n", gcp.project,
                          member, r.role);
      else if (r.scope.starts_with("gs://"))
        md += fmt::format("gcloud storage buckets add-iam-policy-binding {} {} --role={}\n", r.scope, member, r.role);
      else {
        std::string sa = r.scope;
        if (auto at = sa.find("PROJECT_NUMBER"); at != std::string::npos) sa.replace(at, 14, "${PROJECT_NUMBER}");
        md += fmt::format("gcloud iam service-accounts add-iam-policy-binding \"{}\" --project={} {} --role={}\n", sa,
                          gcp.project, member, r.role);
      }
    }
  }
  md += "```\n\n";
  if (sys.ci->cloudbuild && !sys.ci->cloudbuild->service_account.empty())
    md += fmt::format("Whoever submits the Cloud Build configs needs `roles/iam.serviceAccountUser` on `{}` to run "
                      "builds as it.\n\n",
                      sys.ci->cloudbuild->service_account);
  return md;
}

}  // namespace trainc
