// The runbook's CI section (README.md, emit_runbook.cpp): how to install the pipelines emit_ci.cpp
// writes, their one-time setup, and the roles their service account needs.
#include <algorithm>

#include <fmt/format.h>

#include "emit/ci.h"
#include "commands/command.h"
#include "quoting/shell.h"

namespace trainc {
namespace {

/// The check job pulls trainc's image (`traincImage`) from Artifact Registry as the account it
/// signs in as (the planner when there is one): a read grant on that repository alone; "" when the
/// image is elsewhere (a public registry needs none; for gcr.io, grant it on the gcr.io repository).
std::string trainc_image_reader(const GithubCi& gh) {
  const std::string& image = gh.trainc_image;
  const auto slash = image.find('/');
  const std::string host = image.substr(0, slash);
  constexpr std::string_view kSuffix = "-docker.pkg.dev";
  if (slash == std::string::npos || !host.ends_with(kSuffix)) return "";
  const auto second = image.find('/', slash + 1);
  const auto third = second == std::string::npos ? second : image.find('/', second + 1);
  if (third == std::string::npos) return "";
  const std::string location = host.substr(0, host.size() - kSuffix.size());
  const std::string project = image.substr(slash + 1, second - slash - 1);
  const std::string repository = image.substr(second + 1, third - second - 1);
  const std::string& checker = gh.plan_service_account.empty() ? gh.service_account : gh.plan_service_account;
  CommandLine c = cmd::gcloud({"artifacts", "repositories", "add-iam-policy-binding", repository});
  c.opt("--project", project).opt("--location", location).next_line();
  c.opt("--member", "serviceAccount:" + checker).opt("--role", "roles/artifactregistry.reader");
  return fmt::format("The check job runs trainc's image `{}` as `{}`, which needs to read its repository:\n\n```sh\n{}\n```\n\n",
                     image, checker, c.line());
}

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
        "`terraform fmt -check`, `terraform plan`, `trainc plan --against` the base branch's committed output (what "
        "applying the change does: steps re-run, objects rolled or replaced, pools resized or replaced), "
        "`trainc diff --live` against the cluster where it exists (what applying does to the objects as they are "
        "now, and what changed on the cluster by hand since the last apply{5}; it fails the job when applying "
        "would be refused, and warns when the cluster's endpoint cannot be reached from the runner) and the "
        "image builds; on pushes to `{3}` it pushes the images, "
        "runs `terraform apply` and `scripts/apply.sh --services-only` (one deploy at a time){4}. A run started "
        "by hand (workflow_dispatch) with `run_pipeline` also runs `scripts/apply.sh` in full, starting the "
        "pipeline's steps.\n\n",
        ci_workflow_file(sys), p.workflow, p.workflow_copy, gh.branch,
        gh.environment.empty() ? "" : fmt::format(", in the GitHub environment `{}`", gh.environment),
        gh.plan_service_account.empty()
            ? "; as the deployer, with a server-side dry run of each object"
            : "; as the read-only planner, which may not make a server-side dry run, so `--read-only`: changes are "
              "judged by trainc's update rules, not by the server's checks");
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
        "values:\n\n```sh\n{}\n{}\n```\n\n",
        kCloudBuildProvision, kCloudBuildDestroy, sys.services.empty() ? "" : " and runs `scripts/health.sh`",
        cmd::builds_submit(p.in_out(kCloudBuildProvision), gcp.region, subs).line(),
        cmd::builds_submit(p.in_out(kCloudBuildDestroy), gcp.region, subs).line());
  }

  md += "### One-time setup\n\n";
  md += "The Terraform state bucket, with object versioning, and the APIs:\n\n```sh\n";
  for (const auto& c : cmd::state_bucket(gcp)) md += c.line() + "\n";
  md += cmd::enable_apis(gcp.project, ci_apis(sys)).line() + "\n```\n\n";
  if (sys.ci->github) {
    const GithubCi& gh = *sys.ci->github;
    const std::string number = provider_part(gh.provider, "projects");
    const std::string pool = provider_part(gh.provider, "workloadIdentityPools");
    const std::string provider = provider_part(gh.provider, "providers");
    const std::string sa_project = account_project(gh.service_account);
    md += fmt::format(
        "GitHub signs in with Workload Identity Federation (no keys). Create the pool and its GitHub provider in "
        "the project numbered {}, limited to your repository (replace OWNER/REPO), and let the repository's "
        "workflows impersonate `{}`:\n\n```sh\n",
        number, gh.service_account);
    CommandLine create_pool = cmd::gcloud({"iam", "workload-identity-pools", "create", pool});
    create_pool.opt("--project", gcp.project).opt("--location", "global").opt("--display-name", "GitHub Actions");
    CommandLine create_provider = cmd::gcloud({"iam", "workload-identity-pools", "providers", "create-oidc", provider});
    create_provider.opt("--project", gcp.project).opt("--location", "global").next_line();
    create_provider.opt("--workload-identity-pool", pool).opt("--issuer-uri", "https://token.actions.githubusercontent.com");
    create_provider.next_line().opt("--attribute-mapping", "google.subject=assertion.sub,attribute.repository="
                                                           "assertion.repository,attribute.ref=assertion.ref");
    create_provider.next_line().flag("--attribute-condition", "\"assertion.repository == 'OWNER/REPO'\"");
    md += create_pool.line() + "\n" + create_provider.line() + "\n";
    // A CI service account in a project of its own name, and who may act as it.
    auto create_account = [&](const std::string& email, const std::string& project, const std::string& display) {
      if (project.empty()) return;
      md += cmd::gcloud({"iam", "service-accounts", "create", email.substr(0, email.find('@'))})
                .opt("--project", project)
                .opt("--display-name", display)
                .line() +
            "\n";
    };
    auto impersonators = [&](const std::string& email, const std::string& member) {
      md += cmd::gcloud({"iam", "service-accounts", "add-iam-policy-binding", email})
                .opt("--role", "roles/iam.workloadIdentityUser")
                .next_line()
                .opt("--member", member)
                .line() +
            "\n";
    };
    create_account(gh.service_account, sa_project, "trainc CI for " + sys.name);
    const std::string principals =
        fmt::format("principalSet://iam.googleapis.com/projects/{}/locations/global/workloadIdentityPools/{}/", number, pool);
    if (gh.plan_service_account.empty()) {
      impersonators(gh.service_account, principals + "attribute.repository/OWNER/REPO");
      md += "```\n\n";
      md += "Pull requests' `terraform plan` runs as this deployer too, so code on any branch of the repository "
            "acts with its roles before review. Set `ci.github.planServiceAccount` to a read-only account to "
            "bind the deployer to pushes to the deploy branch alone.\n\n";
    } else {
      create_account(gh.plan_service_account, account_project(gh.plan_service_account), "trainc CI plans for " + sys.name);
      md += fmt::format("# The deployer: only workflows running on refs/heads/{}.\n", gh.branch);
      impersonators(gh.service_account, principals + "attribute.ref/refs/heads/" + gh.branch);
      md += "# The planner: any workflow of the repository; it may read, not change.\n";
      impersonators(gh.plan_service_account, principals + "attribute.repository/OWNER/REPO");
      const std::string planner = "serviceAccount:" + gh.plan_service_account;
      for (const char* role : {"roles/viewer", "roles/iam.securityReviewer"})
        md += cmd::gcloud({"projects", "add-iam-policy-binding", gcp.project})
                  .opt("--member", planner)
                  .opt("--role", role)
                  .flag("--condition", "None")
                  .line() +
              "\n";
      md += cmd::gcloud({"storage", "buckets", "add-iam-policy-binding", "gs://" + gcp.state->bucket})
                .opt("--member", planner)
                .opt("--role", "roles/storage.objectViewer")
                .line() +
            "\n```\n\n";
      md += fmt::format("Pull requests plan as `{}` (read-only: `roles/viewer`, `roles/iam.securityReviewer` to read "
                        "IAM policies, and the state bucket's objects; the plan runs with `-lock=false`); only pushes "
                        "to `{}` may act as the deployer.\n\n",
                        gh.plan_service_account, gh.branch);
    }
    md += trainc_image_reader(gh);
    md += fmt::format("The provider's project number is the one in `workloadIdentityProvider`; `{}` prints it.\n\n",
                      cmd::project_number("PROJECT").line());
  }
  // Each CI service account, and whether Cloud Build runs as it.
  std::vector<std::pair<std::string, bool>> accounts;
  if (sys.ci->github) accounts.emplace_back(sys.ci->github->service_account, false);
  if (sys.ci->cloudbuild) {
    std::string account = sys.ci->cloudbuild->service_account;
    if (account.empty()) {
      md += fmt::format("Cloud Build runs as the project's default Cloud Build service account (`{}` names it); "
                        "grant it the roles below, or set `ci.cloudbuild.serviceAccount`.\n\n",
                        cmd::gcloud({"builds", "get-default-service-account"}).line());
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
  md += fmt::format("\n```sh\nPROJECT_NUMBER=$({})\n", cmd::project_number(sh_quote(gcp.project)).line());
  for (const auto& [account, cloudbuild] : accounts) {
    for (const auto& r : roles) {
      if (r.cloudbuild_only && !cloudbuild) continue;
      CommandLine c;
      if (r.scope.empty()) {
        c = cmd::gcloud({"projects", "add-iam-policy-binding", gcp.project});
      } else if (r.scope.starts_with("gs://")) {
        c = cmd::gcloud({"storage", "buckets", "add-iam-policy-binding", r.scope});
      } else {  // the shell fills in the project's number
        std::string sa = r.scope;
        if (auto at = sa.find("PROJECT_NUMBER"); at != std::string::npos) sa.replace(at, 14, "${PROJECT_NUMBER}");
        c = cmd::gcloud({"iam", "service-accounts", "add-iam-policy-binding"}).word("\"" + sa + "\"");
        c.opt("--project", gcp.project);
      }
      c.opt("--member", "serviceAccount:" + account).opt("--role", r.role);
      if (r.scope.empty()) c.flag("--condition", "None");
      md += c.line() + "\n";
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
