// ci target: a GitHub Actions workflow (ci/.github/workflows/<system>.yaml) and Cloud Build configs
// (ci/cloudbuild.provision.yaml, destroy.yaml) that check, build, provision and deploy the system
// from the committed spec and output. Emitted only when the spec has `ci:`.
#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "emit/ci.h"
#include "commands/command.h"
#include "emit/emitter.h"
#include "quoting/shell.h"
#include "base/yaml_writer.h"
#include "model/catalog.h"

namespace trainc {

namespace {

using ojson = nlohmann::ordered_json;

/// `a/b` normalised, with '/', without a trailing '/'; "." for the root.
std::string join(const std::string& a, const std::string& b) {
  std::filesystem::path p = a.empty() ? std::filesystem::path(".") : std::filesystem::path(a);
  if (!b.empty()) p /= b;
  std::string s = p.lexically_normal().generic_string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s.empty() ? "." : s;
}

}  // namespace

std::string CiPaths::in_out(const std::string& rel) const { return join(out, rel); }

std::string CiPaths::context(const Build& b) const { return join(spec_dir, b.context); }

std::string CiPaths::dockerfile(const Build& b) const {
  return b.generated() ? in_out(b.output_dockerfile()) : join(context(b), b.dockerfile);
}

std::string ci_workflow_file(const System& sys) { return "ci/.github/workflows/" + sys.name + ".yaml"; }

CiPaths ci_paths(const System& sys) {
  CiPaths p;
  p.spec = sys.origin.spec.empty() ? "spec.yaml" : join(sys.origin.spec, "");
  p.spec_dir = join(std::filesystem::path(p.spec).parent_path().generic_string(), "");
  p.out_root = join(sys.origin.out, "");
  p.out = join(p.out_root, sys.name);
  p.workflow = p.in_out(ci_workflow_file(sys));
  p.workflow_copy = ".github/workflows/" + sys.name + ".yaml";
  return p;
}

namespace {

bool any_autoscaled(const System& sys) {
  return std::any_of(sys.services.begin(), sys.services.end(), [](const auto& s) { return s.second.autoscaled(); });
}

std::vector<const Store*> created_buckets(const System& sys) {
  std::vector<const Store*> out;
  for (const auto& [_, s] : sys.stores)
    if (s.kind == Store::Kind::gcs && s.create) out.push_back(&s);
  return out;
}

/// Existing buckets (not created by trainc) on which Terraform grants roles to an identity.
std::set<std::string> granted_existing_buckets(const System& sys) {
  std::set<std::string> out;
  for (const Identity* id : sys.identities())
    for (const auto& g : id->grants)
      if (const Store* s = sys.store(g.store); s && s->kind == Store::Kind::gcs && !s->create) out.insert(s->bucket);
  return out;
}

}  // namespace

std::vector<CiRole> ci_roles(const System& sys) {
  std::vector<CiRole> roles;
  roles.push_back({"roles/container.admin",
                   "creates the GKE cluster and its node pools, and applies the Kubernetes objects, operators and "
                   "RBAC (scripts/apply.sh)",
                   ""});
  // The nodes' own account does not exist before the first apply, so acting as it is granted on the project.
  roles.push_back({"roles/iam.serviceAccountUser",
                   "the cluster and its node pools run as the nodes' own service account, which Terraform creates: "
                   "creating them acts as it",
                   ""});
  const bool network = (sys.gcp && sys.gcp->network && sys.gcp->network->create) || sys.rdma_nics() > 0;
  if (network) roles.push_back({"roles/compute.networkAdmin", "creates the VPC network and subnets", ""});
  if (sys.rdma_nics() > 0)
    roles.push_back({"roles/compute.securityAdmin", "creates the firewall rule of the RDMA nodes' second gVNIC network", ""});
  if (!created_buckets(sys).empty())
    roles.push_back({"roles/storage.admin", "creates the buckets of `storage` and grants roles on them; reads and "
                                            "writes Terraform's state",
                     ""});
  else if (sys.gcp && sys.gcp->state)
    roles.push_back({"roles/storage.objectUser", "reads and writes Terraform's state", "gs://" + sys.gcp->state->bucket});
  if (created_buckets(sys).empty())  // else storage.admin on the project covers these buckets too
    for (const auto& b : granted_existing_buckets(sys))
      roles.push_back({"roles/storage.admin", "grants the workloads' service accounts roles on this bucket", "gs://" + b});
  roles.push_back({"roles/iam.serviceAccountAdmin",
                   sys.identities().empty() ? "creates the nodes' Google service account"
                                            : "creates the nodes' and the workloads' Google service accounts and "
                                              "the workloads' Workload Identity bindings",
                   ""});
  roles.push_back({"roles/resourcemanager.projectIamAdmin",
                   any_autoscaled(sys) ? "grants the nodes roles/container.defaultNodeServiceAccount and the metrics "
                                         "adapter roles/monitoring.viewer on the project (iam.tf); the binding can be "
                                         "limited with an IAM condition to those roles"
                                       : "grants the nodes roles/container.defaultNodeServiceAccount on the project "
                                         "(iam.tf); the binding can be limited with an IAM condition to that role",
                   ""});
  if (sys.gcp && sys.gcp->registry && sys.gcp->registry->create)
    roles.push_back({"roles/artifactregistry.admin", "creates the Artifact Registry repository and pushes images", ""});
  else if (!sys.builds.empty())
    roles.push_back({"roles/artifactregistry.writer", "pushes the built images", ""});
  // Terraform manages apis.tf's google_project_service resources (reading and enabling them), and
  // Cloud Build's provision enables the same list first.
  roles.push_back({"roles/serviceusage.serviceUsageAdmin",
                   "Terraform's apis.tf reads and enables the APIs the system uses (and Cloud Build's provision "
                   "enables them first)",
                   ""});
  if (sys.ci && sys.ci->cloudbuild) {
    if (!sys.ci->cloudbuild->service_account.empty())
      roles.push_back({"roles/logging.logWriter", "a build with its own service account writes its logs", "", true});
  }
  return roles;
}

std::vector<std::string> ci_apis(const System& sys) {
  // The APIs Terraform enables (apis.tf), which Cloud Build enables first: Terraform's own calls
  // need some of them (Cloud Resource Manager to read the project's number, say).
  std::vector<std::string> apis;
  for (const GcpApi& api : gcp_apis(sys)) apis.emplace_back(api.service);
  return apis;
}

namespace {

const char* kWorkspaceBin = "/workspace/.trainc-bin";
const char* kKubeconfig = "/workspace/.kube/config";

/// Installs the catalog's helm into `bin` unless a helm is on PATH; the tarball is checked
/// against get.helm.sh's .sha256sum. Lines of a bash script run with `set -euo pipefail`.
std::vector<std::string> helm_install(const std::string& bin) {
  const std::string version = catalog().ci().helm_version;
  return {
      "if command -v helm >/dev/null 2>&1; then",
      "  " + cmd::helm({}, {"version", "--short"}).line(),
      "else",
      fmt::format("  tarball=helm-{}-linux-amd64.tar.gz", version),
      "  tmp=$(mktemp -d)",
      "  curl -fsSL -o \"$tmp/$tarball\" \"https://get.helm.sh/$tarball\"",
      "  curl -fsSL -o \"$tmp/$tarball.sha256sum\" \"https://get.helm.sh/$tarball.sha256sum\"",
      "  (cd \"$tmp\" && sha256sum --check --strict \"$tarball.sha256sum\")",
      "  tar -xzf \"$tmp/$tarball\" -C \"$tmp\"",
      fmt::format("  mkdir -p {}", bin),
      fmt::format("  install -m 0755 \"$tmp/linux-amd64/helm\" {}/helm", bin),
      "  rm -rf \"$tmp\"",
      "fi",
  };
}

std::string lines(const std::vector<std::string>& ls) {
  std::string s;
  for (const auto& l : ls) s += l + "\n";
  return s;
}

/// A script for a Cloud Build `args`: every '$' doubled, so Cloud Build substitutes nothing in it
/// (substitutions reach the script through the step's env).
std::string cloudbuild_script(const std::string& script) {
  std::string out;
  for (char c : script) {
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

/// A repository path as one shell word that no command reads as an option (a folder may be named
/// `-q`): such a path gets a leading `./`.
std::string sh_path(const std::string& path) { return sh_quote(path.starts_with('-') ? "./" + path : path); }

// ---- GitHub Actions -------------------------------------------------------------------------

ojson step_uses(const std::string& name, const std::string& uses, ojson with = nullptr) {
  ojson s;
  s["name"] = name;
  s["uses"] = uses;
  if (!with.is_null()) s["with"] = std::move(with);
  return s;
}

/// Where every job checks the repository out: a folder of the workspace, not its root, because
/// google-github-actions/auth writes its credentials file into the workspace root, where an image
/// build whose context is the repository root would copy it into the image. `run` steps start in
/// it (the jobs' defaults); a step's own working-directory is relative to the workspace.
constexpr std::string_view kCheckoutDir = "src";

ojson step_run(const std::string& name, const std::string& run, const std::string& dir = {}, ojson env = nullptr) {
  ojson s;
  s["name"] = name;
  if (!env.is_null()) s["env"] = std::move(env);
  if (!dir.empty()) s["working-directory"] = fmt::format("{}/{}", kCheckoutDir, dir);
  s["run"] = run;
  return s;
}

/// The checkout leaves no job token in .git/config (persist-credentials), so none reaches a build
/// context either.
ojson checkout() {
  return step_uses("Check out", catalog().ci().checkout, {{"path", kCheckoutDir}, {"persist-credentials", false}});
}

/// A job's `defaults`: run steps start in the checkout.
ojson run_in_checkout() { return {{"run", {{"working-directory", kCheckoutDir}}}}; }

ojson auth(const GithubCi& gh, const std::string& account) {
  return step_uses("Sign in to Google Cloud (Workload Identity Federation)", catalog().ci().auth,
                   {{"workload_identity_provider", gh.provider}, {"service_account", account}});
}

ojson setup_terraform() {
  return step_uses("Set up Terraform", catalog().ci().setup_terraform,
                   {{"terraform_version", catalog().ci().terraform_version}});
}

ojson id_token_permissions() { return {{"contents", "read"}, {"id-token", "write"}}; }

/// The registry host of `image` when it is a Google registry (Artifact Registry or Container
/// Registry), which a job must sign in to before pulling; "" for any other registry.
std::string google_registry_host(const std::string& image) {
  const size_t slash = image.find('/');
  if (slash == std::string::npos) return "";
  const std::string host = image.substr(0, slash);
  if (host.ends_with("-docker.pkg.dev") || host == "gcr.io" || host.ends_with(".gcr.io")) return host;
  return "";
}

/// The spec's folder, the output folder and the workflow's copy, each unless a folder already
/// listed holds it.
ojson paths_filter(const CiPaths& p) {
  auto inside = [](const std::string& path, const std::string& dir) {
    return dir == "." || path == dir || path.starts_with(dir + "/");
  };
  auto glob = [](const std::string& dir) { return dir == "." ? std::string("**") : dir + "/**"; };
  ojson paths = ojson::array({glob(p.spec_dir)});
  if (!inside(p.out, p.spec_dir)) paths.push_back(glob(p.out));
  if (!inside(p.workflow_copy, p.spec_dir) && !inside(p.workflow_copy, p.out)) paths.push_back(p.workflow_copy);
  return paths;
}

/// No `${{ }}` expression may reach a `run:` script: GitHub pastes its value into the script's text
/// before the shell parses it, so text from a spec or an event could run as commands. Values reach
/// scripts through `env` instead. A violation is a bug in this emitter.
void refuse_expressions_in_scripts(const ojson& node) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if (key == "run" && value.is_string() && value.get<std::string>().find("${{") != std::string::npos)
        throw std::logic_error("a GitHub run script holds a ${{ }} expression: " + value.get<std::string>());
      refuse_expressions_in_scripts(value);
    }
  } else if (node.is_array()) {
    for (const auto& v : node) refuse_expressions_in_scripts(v);
  }
}

std::string github_workflow(const System& sys) {
  const GithubCi& gh = *sys.ci->github;
  const Gcp& gcp = *sys.gcp;
  const CiPaths p = ci_paths(sys);
  const std::string tf = p.in_out("terraform");
  const std::string on_branch =
      fmt::format("github.event_name != 'pull_request' && github.ref == 'refs/heads/{}'", gh.branch);

  ojson wf;
  wf["name"] = fmt::format("trainc {}", sys.name);
  ojson on;
  const ojson filter = {{"branches", ojson::array({gh.branch})}, {"paths", paths_filter(p)}};
  on["pull_request"] = filter;
  on["push"] = filter;
  on["workflow_dispatch"]["inputs"]["run_pipeline"] = {
      {"description", "Also run the pipeline's steps (scripts/apply.sh in full) after the deploy"},
      {"type", "boolean"},
      {"default", false}};
  wf["on"] = on;
  wf["permissions"] = {{"contents", "read"}};
  ojson env = {{"PROJECT_ID", gcp.project}, {"REGION", gcp.region}};
  if (!gcp.zone.empty()) env["ZONE"] = gcp.zone;
  wf["env"] = env;

  ojson jobs;
  {  // check: every event
    ojson steps = ojson::array({checkout()});
    // trainc's image is private when it lives in a Google registry: the job signs in, then runs it
    // with `docker run`. A job-level `container:` cannot be used: GitHub pulls it before any step,
    // so before the auth action could sign in. It signs in as the planner when there is one (the
    // job runs on pull requests), which needs read access to that repository.
    const std::string trainc_host = google_registry_host(gh.trainc_image);
    if (!trainc_host.empty()) {
      steps.push_back(auth(gh, gh.plan_service_account.empty() ? gh.service_account : gh.plan_service_account));
      steps.push_back(step_uses("Set up gcloud", catalog().ci().setup_gcloud));
      steps.push_back(step_run("Let docker pull trainc's image",
                               cmd::gcloud({"auth", "configure-docker", trainc_host}).flag("--quiet").line()));
    }
    steps.push_back(step_run("The committed output is what the spec compiles to (trainc diff)",
                             fmt::format("docker run --rm -v \"$PWD:/src\" -w /src {} diff {} --against {} "
                                         "--diagnostics=github",
                                         sh_quote(gh.trainc_image), sh_path(p.spec), sh_path(p.out_root))));
    steps.push_back(step_run(
        "The workflow copy is current",
        lines({fmt::format("if ! cmp -s {} {}; then", sh_path(p.workflow), sh_path(p.workflow_copy)),
               fmt::format("  echo {}", sh_quote(fmt::format("::error file={}::not the workflow trainc generated; "
                                                             "copy it again and commit:",
                                                             p.workflow_copy))),
               fmt::format("  echo {}", sh_quote(fmt::format("cp {} {}", p.workflow, p.workflow_copy))),
               "  exit 1", "fi"})));
    steps.push_back(setup_terraform());
    steps.push_back(step_run("terraform fmt", "terraform fmt -check -recursive", tf));
    ojson job = {{"runs-on", "ubuntu-latest"}};
    if (!trainc_host.empty()) job["permissions"] = id_token_permissions();
    job["defaults"] = run_in_checkout();
    job["steps"] = steps;
    jobs["check"] = job;
  }
  {  // plan: pull requests
    // Pull requests plan as the read-only planner when there is one: a branch's code runs here.
    ojson steps = ojson::array(
        {checkout(), auth(gh, gh.plan_service_account.empty() ? gh.service_account : gh.plan_service_account),
         setup_terraform()});
    steps.push_back(step_run("terraform init", "terraform init -input=false", tf));
    steps.push_back(step_run("terraform plan", "terraform plan -input=false -lock=false", tf));
    // What the change does to the running system: the base branch's committed output is what its
    // deploy applied, so `trainc plan --against` it names the steps that re-run, the objects that
    // roll or are replaced and the pools resized or replaced.
    const std::string base = fmt::format(".trainc-base/{}", p.out);
    steps.push_back(step_uses("Check out the base branch's output", catalog().ci().checkout,
                              {{"ref", "${{ github.base_ref }}"},
                               {"path", fmt::format("{}/.trainc-base", kCheckoutDir)},
                               {"sparse-checkout", p.out},
                               {"persist-credentials", false}}));
    const std::string trainc_host = google_registry_host(gh.trainc_image);
    steps.push_back(step_uses("Set up gcloud", catalog().ci().setup_gcloud));
    if (!trainc_host.empty())
      steps.push_back(step_run("Let docker pull trainc's image",
                               cmd::gcloud({"auth", "configure-docker", trainc_host}).flag("--quiet").line()));
    steps.push_back(step_run(
        "What applying it does (trainc plan --against the base branch's output)",
        lines({fmt::format("if [ ! -d {} ]; then", sh_path(base + "/k8s")),
               fmt::format("  echo {}", sh_quote(fmt::format("{} is not on the base branch: every object is created", p.out))),
               "  exit 0", "fi",
               fmt::format("docker run --rm -v \"$PWD:/src\" -w /src {} plan {} --against {}", sh_quote(gh.trainc_image),
                           sh_path(p.spec), sh_path(base))})));
    // And to the cluster as it is now (trainc diff --live), where there is one: drift, what its
    // server refuses, which runs are there. As the planner, read-only: RBAC authorizes a server-side
    // dry run as the write it stands for. The credentials are a short-lived token in a kubeconfig
    // (get-gke-credentials without the auth plugin), which trainc's image reads with its kubectl.
    const std::string location = gcp.zone.empty() ? "REGION" : "ZONE";
    const auto describe = cmd::gcloud({"container", "clusters", "describe", sys.cluster.name})
                              .flag("--location", "\"$" + location + "\"")
                              .flag("--project", "\"$PROJECT_ID\"");
    ojson there = step_run(
        "Is the cluster there?",
        lines({fmt::format("if {} >/dev/null 2>&1; then", describe.line()), "  echo exists=true >>\"$GITHUB_OUTPUT\"",
               "else", "  echo exists=false >>\"$GITHUB_OUTPUT\"",
               fmt::format("  echo {}", sh_quote(fmt::format("no cluster {} yet: nothing on it to compare", sys.cluster.name))),
               "fi"}));
    there["id"] = "cluster";
    steps.push_back(there);
    const bool read_only = !gh.plan_service_account.empty();
    ojson credentials = step_uses(read_only ? "Credentials for the cluster (the planner's: it may only read)"
                                            : "Credentials for the cluster",
                                  catalog().ci().gke_credentials,
                                  {{"cluster_name", sys.cluster.name},
                                   {"location", fmt::format("${{{{ env.{} }}}}", location)},
                                   {"project_id", "${{ env.PROJECT_ID }}"}});
    credentials["if"] = "steps.cluster.outputs.exists == 'true'";
    steps.push_back(credentials);
    ojson live = step_run(
        "What applying it does to the cluster as it is (trainc diff --live)",
        lines({"rc=0",
               "docker run --rm --network host --user \"$(id -u):$(id -g)\" -e HOME=/tmp \\",
               "  -v \"$PWD:/src\" -v \"$KUBECONFIG:/tmp/kubeconfig:ro\" -w /src \\",
               fmt::format("  {} diff --live {} --kubeconfig /tmp/kubeconfig{} || rc=$?", sh_quote(gh.trainc_image),
                           sh_path(p.spec), read_only ? " --read-only" : ""),
               "# 0: nothing would change; 1: changes or drift (above); 2: the cluster could not be asked; 3: applying "
               "would be refused",
               "if [ \"$rc\" -eq 2 ]; then",
               "  echo '::warning::trainc diff --live could not ask the cluster (a private endpoint is not reachable "
               "from this runner); the plan above is against the base branch only'",
               "elif [ \"$rc\" -gt 1 ]; then", "  exit \"$rc\"", "fi"}));
    live["if"] = "steps.cluster.outputs.exists == 'true'";
    steps.push_back(live);
    jobs["plan"] = {{"if", "github.event_name == 'pull_request'"},
                    {"needs", "check"},
                    {"runs-on", "ubuntu-latest"},
                    {"permissions", id_token_permissions()},
                    {"defaults", run_in_checkout()},
                    {"steps", steps}};
  }
  // A build's step: on pull requests it only builds; in the deploy it pushes, unless the tag is
  // in the registry already (tags digest the build's inputs, so the same tag is the same image).
  auto image_step = [&](const std::string& name, const Build& b, bool push) {
    std::vector<std::string> script;
    if (push)
      script = {fmt::format("if {} >/dev/null 2>&1; then",
                            cmd::gcloud({"artifacts", "docker", "images", "describe"}).word("\"$IMAGE\"").line()),
                "  echo \"$IMAGE is in the registry already; not rebuilt\"", "  exit 0", "fi"};
    script.push_back(
        fmt::format("docker build -f {} -t \"$IMAGE\" {}", sh_path(p.dockerfile(b)), sh_path(p.context(b))));
    if (push) script.emplace_back("docker push \"$IMAGE\"");
    return step_run(fmt::format("Image {}", name), lines(script), "", {{"IMAGE", b.image}});
  };
  if (!sys.builds.empty()) {  // images: pull requests build them (no sign-in; the deploy pushes)
    ojson steps = ojson::array({checkout()});
    for (const auto& [name, b] : sys.builds) steps.push_back(image_step(name, b, false));
    jobs["images"] = {{"if", "github.event_name == 'pull_request'"},
                      {"needs", "check"},
                      {"runs-on", "ubuntu-latest"},
                      {"defaults", run_in_checkout()},
                      {"steps", steps}};
  }
  {  // deploy: pushes to the branch, and runs started by hand on it
    ojson steps = ojson::array({checkout(), auth(gh, gh.service_account)});
    steps.push_back(step_uses("Set up gcloud", catalog().ci().setup_gcloud,
                              {{"install_components", "gke-gcloud-auth-plugin,kubectl"}}));
    steps.push_back(setup_terraform());
    steps.push_back(step_run("terraform init", "terraform init -input=false", tf));
    steps.push_back(step_run("terraform apply", "terraform apply -input=false -auto-approve", tf));
    // After Terraform: it creates the Artifact Registry repository the images go to.
    if (!sys.builds.empty()) {
      steps.push_back(step_run("Let docker push to Artifact Registry",
                               cmd::gcloud({"auth", "configure-docker", gcp.registry->host()}).flag("--quiet").line()));
      for (const auto& [name, b] : sys.builds) steps.push_back(image_step(name, b, true));
    }
    std::vector<std::string> helm = helm_install("\"$RUNNER_TEMP/helm\"");
    helm.emplace_back("echo \"$RUNNER_TEMP/helm\" >>\"$GITHUB_PATH\"");
    steps.push_back(step_run("Helm", lines(helm)));
    const std::string apply = "bash " + sh_path(p.in_out("scripts/apply.sh"));
    steps.push_back(step_run("Apply the shared objects and services, and check their health",
                             apply + " --services-only"));
    ojson run = step_run("Run the pipeline", apply);
    run["if"] = "github.event_name == 'workflow_dispatch' && inputs.run_pipeline";
    steps.push_back(run);
    ojson job;
    job["if"] = on_branch;
    job["needs"] = "check";
    job["runs-on"] = "ubuntu-latest";
    if (!gh.environment.empty()) job["environment"] = gh.environment;
    job["concurrency"] = {{"group", fmt::format("trainc-{}-deploy", sys.name)}, {"cancel-in-progress", false}};
    job["permissions"] = id_token_permissions();
    job["defaults"] = run_in_checkout();
    job["steps"] = steps;
    jobs["deploy"] = job;
  }
  // A job that runs long (a hostile spec, a hung tool) stops at its bound, not GitHub's six hours.
  for (auto& [name, job] : jobs.items()) {
    const auto it = catalog().ci().job_minutes.find(name);
    if (it == catalog().ci().job_minutes.end()) throw std::logic_error("catalog ci.jobTimeoutMinutes lacks job " + name);
    ojson bounded;
    for (auto& [k, v] : job.items()) {
      if (k == "steps") bounded["timeout-minutes"] = it->second;
      bounded[k] = v;
    }
    job = bounded;
  }
  wf["jobs"] = jobs;
  refuse_expressions_in_scripts(wf);
  return to_yaml(wf, fmt::format("{}\nCopy to {} (the check job fails while the copy differs).\n"
                                 "Checks pull requests (trainc diff, terraform fmt and plan, trainc plan --against the base branch's "
                                 "output and diff --live against the cluster, image builds) and deploys "
                                 "pushes to {}.",
                                 kGeneratedNotice, p.workflow_copy, gh.branch));
}

// ---- Cloud Build ----------------------------------------------------------------------------

struct CloudBuild {
  const System& sys;
  const Rollout& rollout;
  CiPaths p = ci_paths(sys);
  bool zonal = !sys.gcp->zone.empty();

  std::string location_sub() const { return zonal ? "${_ZONE}" : "${_REGION}"; }

  /// A built image as the config's substitutions name it, so a build submitted with another
  /// project or `_REGION` pushes there: the project is $PROJECT_ID, and the registry's location
  /// ${_REGION} when it is the system's region (a registry placed elsewhere keeps its location).
  std::string image(const Build& b) const {
    const Gcp& gcp = *sys.gcp;
    const std::string prefix = gcp.registry->host() + "/" + gcp.project + "/";
    if (!b.image.starts_with(prefix)) return b.image;
    const std::string host = gcp.registry->location == gcp.region ? "${_REGION}-docker.pkg.dev" : gcp.registry->host();
    return host + "/$PROJECT_ID/" + b.image.substr(prefix.size());
  }

  ojson env() const {
    ojson e = ojson::array({"PROJECT_ID=$PROJECT_ID", "REGION=${_REGION}"});
    if (zonal) e.push_back("ZONE=${_ZONE}");
    e.push_back(fmt::format("KUBECONFIG={}", kKubeconfig));
    return e;
  }

  ojson step(const std::string& id, const std::string& image, ojson waits) const {
    ojson s;
    s["id"] = id;
    s["name"] = image;
    if (!waits.is_null()) s["waitFor"] = std::move(waits);
    return s;
  }

  ojson bash(const std::string& id, const std::string& image, const std::string& script, ojson waits) const {
    ojson s = step(id, image, std::move(waits));
    s["entrypoint"] = "bash";
    s["env"] = env();
    s["args"] = ojson::array({"-c", cloudbuild_script("set -euo pipefail\n" + script)});
    return s;
  }

  ojson terraform(const std::string& id, ojson args, ojson waits) const {
    ojson s = step(id, catalog().ci().terraform_image, std::move(waits));
    s["dir"] = p.in_out("terraform");
    s["args"] = std::move(args);
    return s;
  }

  ojson init(const std::string& id, ojson waits) const {
    return terraform(id,
                     {"init", "-input=false", "-backend-config=bucket=${_TF_STATE_BUCKET}",
                      "-backend-config=prefix=${_TF_STATE_PREFIX}"},
                     std::move(waits));
  }

  ojson vars(ojson args) const {
    args.push_back("-var=project_id=$PROJECT_ID");
    args.push_back("-var=region=${_REGION}");
    if (zonal) args.push_back("-var=zone=${_ZONE}");
    return args;
  }

  /// What every config ends with: substitutions, timeout, service account and options.
  void finish(ojson& cfg) const {
    const Gcp& gcp = *sys.gcp;
    const CloudBuildCi& cb = *sys.ci->cloudbuild;
    ojson subs;
    subs["_REGION"] = gcp.region;
    if (zonal) subs["_ZONE"] = gcp.zone;
    subs["_TF_STATE_BUCKET"] = gcp.state->bucket;
    subs["_TF_STATE_PREFIX"] = gcp.state->prefix;
    cfg["substitutions"] = subs;
    cfg["timeout"] = fmt::format("{}s", cb.timeout_seconds);
    if (!cb.service_account.empty())
      cfg["serviceAccount"] = fmt::format("projects/$PROJECT_ID/serviceAccounts/{}", cb.service_account);
    ojson options;
    if (!cb.machine_type.empty()) options["machineType"] = cb.machine_type;
    if (!cb.service_account.empty()) options["logging"] = "CLOUD_LOGGING_ONLY";
    if (!options.empty()) cfg["options"] = options;
  }

  std::string header(const std::string& what, const std::string& config) const {
    std::string subs = fmt::format("_REGION={}", sys.gcp->region);
    if (zonal) subs += ",_ZONE=" + sys.gcp->zone;
    return fmt::format("{}\n{}\nRun from the repository root:\n  {}", kGeneratedNotice, what,
                       cmd::builds_submit(p.in_out(config), sys.gcp->region, subs).line());
  }

  std::string provision() const {
    const std::string sdk = catalog().ci().cloud_sdk_image;
    ojson steps = ojson::array();
    ojson enable = step("enable-apis", sdk, ojson::array({"-"}));
    // Cloud Build substitutes $PROJECT_ID in the arguments; no shell reads them.
    const std::vector<std::string> argv = cmd::enable_apis("$PROJECT_ID", ci_apis(sys)).argv();
    enable["entrypoint"] = argv.front();
    enable["args"] = ojson::array();
    for (auto it = argv.begin() + 1; it != argv.end(); ++it) enable["args"].push_back(*it);
    steps.push_back(enable);
    steps.push_back(init("terraform-init", ojson::array({"enable-apis"})));
    steps.push_back(terraform("terraform-apply", vars({"apply", "-input=false", "-auto-approve"}),
                              ojson::array({"terraform-init"})));
    ojson after_images = ojson::array({"terraform-apply"});
    for (const auto& [name, b] : sys.builds) {
      const std::string id = "image-" + name;
      ojson s = step(id, catalog().ci().docker_image, ojson::array({"terraform-apply"}));
      s["entrypoint"] = "bash";
      s["env"] = ojson::array({"IMAGE=" + image(b)});
      s["args"] = ojson::array(
          {"-c", cloudbuild_script(lines(
                     {"set -euo pipefail", "if docker manifest inspect \"$IMAGE\" >/dev/null 2>&1; then",
                      "  echo \"$IMAGE is in the registry already; not rebuilt\"", "  exit 0", "fi",
                      fmt::format("docker build -f {} -t \"$IMAGE\" {}", sh_path(p.dockerfile(b)),
                                  sh_path(p.context(b))),
                      "docker push \"$IMAGE\""}))});
      steps.push_back(s);
      after_images.push_back(id);
    }
    std::vector<std::string> apply = helm_install(kWorkspaceBin);
    apply.push_back(fmt::format("export PATH=\"{}:$PATH\"", kWorkspaceBin));
    apply.push_back(fmt::format("bash {} --services-only", sh_path(p.in_out("scripts/apply.sh"))));
    steps.push_back(bash("apply-services", sdk, lines(apply), after_images));
    if (!sys.services.empty())
      steps.push_back(bash("health", sdk, fmt::format("bash {}\n", sh_path(p.in_out("scripts/health.sh"))),
                           ojson::array({"apply-services"})));
    ojson cfg;
    cfg["steps"] = steps;
    finish(cfg);
    return to_yaml(cfg, header("Provisions the system: APIs, Terraform (remote state), images, the shared objects "
                               "and services (scripts/apply.sh --services-only) and their health check.",
                               kCloudBuildProvision));
  }

  std::string destroy() const {
    const std::string sdk = catalog().ci().cloud_sdk_image;
    // The rollout's teardown (k8s/rollout.h) up to the infrastructure, which Terraform destroys.
    const KubeTarget kube{"", "", false};
    auto cluster = [&](std::string_view verb) {
      return cmd::gcloud({"container", "clusters", verb, sys.cluster.name})
          .flag("--location", "\"$LOCATION\"")
          .flag("--project", "\"$PROJECT_ID\"");
    };
    std::vector<std::string> k8s{
        fmt::format("if ! {} >/dev/null 2>&1; then", cluster("describe").line()),
        fmt::format("  echo {}", sh_quote(fmt::format("no cluster {}: no Kubernetes objects to delete", sys.cluster.name))),
        "  exit 0",
        "fi",
        cluster("get-credentials").line()};
    const std::string k8s_dir =
        p.in_out(std::filesystem::path(k8s::Plan{}.kustomization).parent_path().generic_string());
    for (const auto& step : rollout.teardown) {
      if (step.kind == TeardownStep::Kind::kReleaseLoadBalancer) {  // no helm here: its Service alone
        k8s.emplace_back("# The ingress gateway's LoadBalancer Service first, so the cluster releases its load balancer.");
        k8s.push_back(cmd::kubectl(kube, {"delete", "service", step.chart->release, "-n", step.chart->ns,
                                          "--ignore-not-found", "--wait=true", "--timeout=10m"})
                          .line());
      }
      if (step.kind == TeardownStep::Kind::kDeleteObjects)
        k8s.push_back(cmd::kubectl(kube, {"delete", "-k", k8s_dir, "--ignore-not-found", "--wait=true", "--timeout=10m"})
                          .line() +
                      " ||");
    }
    k8s.emplace_back("  echo 'some Kubernetes objects were not deleted; terraform destroy deletes the cluster with them'");
    ojson del = bash("delete-kubernetes-objects", sdk, lines(k8s), ojson::array({"-"}));
    del["env"].push_back(fmt::format("LOCATION={}", location_sub()));
    ojson steps = ojson::array({del});
    steps.push_back(init("terraform-init", ojson::array({"-"})));
    steps.push_back(terraform("terraform-destroy", vars({"destroy", "-input=false", "-auto-approve"}),
                              ojson::array({"delete-kubernetes-objects", "terraform-init"})));
    ojson cfg;
    cfg["steps"] = steps;
    finish(cfg);
    return to_yaml(cfg, header("Destroys the system: the Kubernetes objects (so load balancers are released), then "
                               "everything Terraform made.",
                               kCloudBuildDestroy));
  }
};

class CiEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "ci"; }
  void emit(const System& sys, const Planned& plan, OutputSink& out) const override {
    if (!sys.ci || !sys.gcp || !sys.gcp->state) return;  // lowering requires gcp.state with ci
    // A pipeline names the spec and the output as paths of its repository; compiled outside one, it
    // could only name paths that climb out of it (the compile warns, and the runbook says so).
    if (!sys.origin.outside_repository.empty()) return;
    if (sys.ci->github) out.add(ci_workflow_file(sys), github_workflow(sys));
    if (sys.ci->cloudbuild) {
      CloudBuild cb{sys, plan.rollout};
      out.add(kCloudBuildProvision, cb.provision());
      out.add(kCloudBuildDestroy, cb.destroy());
    }
  }
};

}  // namespace

std::unique_ptr<Emitter> new_ci_emitter() { return std::make_unique<CiEmitter>(); }

}  // namespace trainc
