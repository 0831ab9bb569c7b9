// scripts/build.sh: builds the images trainc's outputs build (Build, model.h) and pushes them to
// the system's Artifact Registry repository, each unless its content tag is there already: with
// `docker buildx` where Docker is, else with Cloud Build, which needs no local Docker. Emitted
// only for a system with builds (which have a `gcp:`); the CI pipelines build the same images.
// The runbook's section on it is here too.
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "emit/emit_scripts.h"
#include "io/tree_writer.h"

namespace trainc::scripts {
namespace {

/// The Dockerfile a build uses as one shell word: a generated one is in the output folder.
std::string dockerfile_word(const Build& b) {
  if (b.generated()) return dq(Var{"OUT_DIR"}, "/", b.output_dockerfile());
  const std::string in_context = (std::filesystem::path(b.context) / b.dockerfile).lexically_normal().generic_string();
  return in_spec_dir(in_context);
}

/// The platforms of the nodes whose pods run `b`'s image: arm64 on Arm pools, else amd64.
std::string platforms(const System& sys, const Build& b) {
  std::set<std::string> pools;
  for (const auto& s : sys.steps)
    if (s.image == b.image) pools.insert(s.pool);
  for (const auto& [_, s] : sys.services)
    if (s.image == b.image) pools.insert(s.pool);
  for (const auto& [_, c] : sys.clusters) {
    if (c.image != b.image) continue;
    pools.insert(c.lead().pool);
    for (const auto& g : c.workers) pools.insert(g.pool);
  }
  bool amd = false, arm = false;
  for (const auto& name : pools) {
    const Pool* p = sys.pool(name);
    (p && p->arm ? arm : amd) = true;
  }
  if (arm && amd) return "linux/amd64,linux/arm64";
  return arm ? "linux/arm64" : "linux/amd64";
}

/// The spec's folder, which the build contexts are relative to (find_spec_dir), and the upload's.
void paths(ShellScript& sh, const System& sys) {
  find_spec_dir(sh, sys, "build.sh");
  sh.comment("Cloud Build's upload of the image being built, removed on exit.");
  sh.line("STAGE=''");
  sh.line("trap 'if [ -n \"$STAGE\" ]; then rm -rf \"$STAGE\"; fi' EXIT");
}

/// Stops unless the images can go where the manifests name them: the spec's project, and the
/// repository up.sh (or Terraform) makes.
void checks(ShellScript& sh, const System& sys, const Registry& r) {
  const std::string& project = sys.gcp->project;
  sh.line();
  sh.comment(fmt::format("The manifests name the images in project {}: pushed elsewhere, no pod would find them.", project));
  sh.open(fmt::format("if [ \"$PROJECT_ID\" != {} ]; then", lit(project)))
      .line(fmt::format("die \"the manifests name images in project {}, not $PROJECT_ID; compile the spec for that "
                        "project\"",
                        dq_part(project)))
      .close("fi");
  sh.comment(r.create ? "The repository the images go to: up.sh (or Terraform) creates it."
                      : "The repository the images go to, which exists already (the spec's `create: false`).");
  open_if(sh, "! present", repository_call("describe", r));
  sh.line(fmt::format("die {}", lit(fmt::format("repository {} in {} does not exist; {}", r.repository, r.location,
                                                r.create ? "run up.sh (or Terraform) first"
                                                         : "the spec names it as existing (create: false)"))));
  sh.close("fi");
}

void builder(ShellScript& sh, const System& sys) {
  sh.line();
  sh.comment("Where the images are built: here with docker buildx, where docker has it (pushing as you),");
  sh.comment("else remotely with Cloud Build, which needs no local Docker. A dry run asks docker nothing.");
  sh.open("if [ \"$CLOUD_BUILD\" = 1 ] || ! command -v docker >/dev/null; then")
      .line("USE_DOCKER=0")
      .branch("elif [ \"$DRY_RUN\" = 1 ] || docker buildx version >/dev/null 2>&1; then")
      .line("USE_DOCKER=1")
      .branch("else")
      .line("log 'docker has no buildx plugin: building with Cloud Build'")
      .line("USE_DOCKER=0")
      .close("fi");
  sh.line("readonly USE_DOCKER");
  sh.line("READY=0 BUILT=0");
  sh.line();
  sh.comment("Once, before the first build: docker signs in to the registry's host with your gcloud");
  sh.comment("credentials; Cloud Build's API is enabled (enabling it again changes nothing).");
  Call sign_in = gcloud({"auth", "configure-docker", lit(sys.gcp->registry->host())});
  Call enable = gcloud({"services", "enable", "cloudbuild.googleapis.com"});
  sh.open("prepare() {")
      .line("if [ \"$READY\" = 1 ]; then return 0; fi")
      .line("READY=1")
      .open("if [ \"$USE_DOCKER\" = 1 ]; then")
      .line("run " + sign_in.flag("--quiet").line())
      .branch("else")
      .line("run " + at(enable, false).line())
      .close("fi")
      .close("}");
}

/// The copy of a context Cloud Build gets: what git tracks, as the content tag digests it.
void stage_context_function(ShellScript& sh) {
  sh.line();
  sh.comment("Copies build context $1 into folder $2. In a git work tree only the files git tracks go, as");
  sh.comment("compiled output digests them (a checkout holds nothing else); elsewhere every file in it.");
  sh.open("stage_context() {")
      .open("if git -C \"$1\" rev-parse --is-inside-work-tree >/dev/null 2>&1; then")
      .line("git -C \"$1\" ls-files -z --cached -- . | (cd \"$1\" && tar --null -T - -cf -) | tar -C \"$2\" -xf - ||")
      .line("  die \"cannot copy the files git tracks in $1 (one deleted but not from git?)\"")
      .branch("else")
      .line("log \"$1 is in no git work tree: uploading every file in it\"")
      .line("cp -a \"$1/.\" \"$2/\"")
      .close("fi")
      .close("}");
}

/// Cloud Build's path: `gcloud builds submit --tag` of a staged copy of the context.
void cloud_build_function(ShellScript& sh) {
  stage_context_function(sh);
  sh.line();
  sh.comment("Builds image $1 with Cloud Build from context $2 and Dockerfile $3, for platform $4.");
  sh.comment("gcloud's `builds submit --tag IMAGE` runs `docker build -t IMAGE .` in the folder it uploads,");
  sh.comment("which must hold the Dockerfile as ./Dockerfile; a generated Dockerfile lives outside its");
  sh.comment("context, and a user's may have another name. So the context is copied to a temporary folder");
  sh.comment("with the Dockerfile as ./Dockerfile: in a git work tree only the files git tracks, which the");
  sh.comment("content tag digests, so no untracked file (a local .env, say) goes up. The context's .dockerignore");
  sh.comment("comes along and filters the remote build as it filters a local one; the .gcloudignore written");
  sh.comment("there keeps gcloud from filtering the upload again. A --config of our own would need the same");
  sh.comment("copy and a config file besides, for the same docker build.");
  Call submit = gcloud({"builds", "submit", "\"$folder\""});
  submit.flag("--tag", "\"$1\"").flag("--region", ref("REGION"));
  at(submit, false);
  sh.open("cloud_build() {")
      .line("local folder=TEMPORARY_FOLDER")
      .open("if [ \"$4\" != linux/amd64 ]; then")
      .line("die \"$1 runs on $4 nodes: Cloud Build builds for linux/amd64; build it where docker buildx is\"")
      .close("fi")
      .line("log \"uploading $2 with $3 as its Dockerfile\"")
      .open("if [ \"$DRY_RUN\" = 0 ]; then")
      .line("STAGE=$(mktemp -d)")
      .line("folder=$STAGE")
      .line("stage_context \"$2\" \"$folder\"")
      .line("rm -rf \"$folder/Dockerfile\"")
      .line("cp \"$3\" \"$folder/Dockerfile\"")
      .line("printf '%s\\n' '# build.sh: upload all; the .dockerignore filters the build' .gcloudignore >\"$folder/.gcloudignore\"")
      .close("fi");
  for (const auto& l : render(submit, "run ", "")) sh.line(l);
  sh.open("if [ \"$DRY_RUN\" = 0 ]; then")
      .line("rm -rf \"$STAGE\"")
      .line("STAGE=''")
      .close("fi")
      .close("}");
}

void build_function(ShellScript& sh) {
  Call describe = gcloud({"artifacts", "docker", "images", "describe", "\"$1\""});
  CommandLine buildx;
  buildx.arg("docker").arg("buildx").arg("build").arg("--push");
  buildx.word("--platform").word("\"$4\"").word("-f").word("\"$3\"").word("-t").word("\"$1\"").word("\"$2\"");
  sh.line();
  sh.comment("Builds image $1 from context $2 with Dockerfile $3 for platform $4 and pushes it, unless the");
  sh.comment("registry has its tag already (or --force): a tag digests the build's inputs, so the same tag");
  sh.comment("is the same image. A dry run asks nothing and shows every build.");
  sh.open("build() {")
      .open("if [ \"$FORCE\" = 0 ] && [ \"$DRY_RUN\" = 0 ] && exists " + describe.line() + "; then")
      .line("log \"$1 is in the registry already; not rebuilt\"")
      .line("return 0")
      .close("fi")
      .line("[ -d \"$2\" ] || die \"no build context $2 (build.sh builds from the spec's folder, beside the output)\"")
      .line("[ -f \"$3\" ] || die \"no Dockerfile $3\"")
      .line("prepare")
      .open("if [ \"$USE_DOCKER\" = 1 ]; then")
      .line("run " + buildx.line())
      .branch("else")
      .line("cloud_build \"$@\"")
      .close("fi")
      .line("BUILT=$((BUILT + 1))")
      .close("}");
}

}  // namespace

std::string build_script(const System& sys) {
  const Registry& r = *sys.gcp->registry;
  ShellScript sh;
  prologue(sh, sys,
           {"build.sh", "builds and pushes the images",
            {"Builds each image the manifests name that trainc builds, and pushes it to the system's",
             "registry, unless its content tag is there already: with docker buildx where docker has",
             "it, else with Cloud Build (gcloud builds submit; no local Docker needed). Run up.sh (or",
             "Terraform) first: it creates the repository. The tags digest the spec's build inputs:",
             "after changing them, compile again. CI pipelines (the spec's ci:) build the same images."}},
           {{"--force", "FORCE", "build and push even the images whose tag is in the registry"},
            {"--cloud-build", "CLOUD_BUILD", "build with Cloud Build even where docker is"}},
           {.region = true, .cluster = false});
  check_functions(sh, false);
  paths(sh, sys);
  builder(sh, sys);
  cloud_build_function(sh);
  build_function(sh);
  sh.line();
  sh.line("if [ \"$DRY_RUN\" = 1 ]; then log 'dry run: commands are printed, not run; every image is taken as missing'; fi");
  checks(sh, sys, r);
  for (const auto& [name, b] : sys.builds) {
    sh.line();
    sh.comment(fmt::format("The image of {} '{}'.", b.of, name));
    sh.line(fmt::format("build {} {} \\", lit(b.image), in_spec_dir(b.context)));
    sh.line(fmt::format("  {} {}", dockerfile_word(b), lit(platforms(sys, b))));
  }
  sh.line();
  sh.open("if [ \"$DRY_RUN\" = 1 ]; then")
      .line("log 'dry run done: nothing was built'")
      .branch("else")
      .line("log \"done: $BUILT image(s) built and pushed; next: apply.sh\"")
      .close("fi");
  return sh.text();
}

std::string build_runbook_section(const System& sys) {
  if (!sys.gcp || sys.builds.empty()) return "";
  std::string md = "\n## Build the images\n\nThe pods pull images trainc builds, tagged by the content of their inputs:\n\n";
  for (const auto& [name, b] : sys.builds)
    md += fmt::format("- `{}`: {} `{}`, from `{}` in the spec's folder ({})\n", b.image, b.of, name, b.context,
                      b.generated() ? fmt::format("Dockerfile `{}`", b.output_dockerfile())
                                    : fmt::format("its Dockerfile `{}`", b.dockerfile));
  md += "\nThey must be in the registry before anything is applied: `scripts/apply.sh` checks each first and "
        "stops naming the one missing. `scripts/build.sh` builds and pushes each whose tag is not there yet, with "
        "`docker buildx` where Docker is, else with Cloud Build (gcloud's `builds submit`, no local Docker needed); "
        "run it after `scripts/up.sh` (which creates the repository) from a checkout holding the spec's folder. "
        "Cloud Build pushes as the build's service account (the project's default one), which must be allowed to "
        "write to the repository (`roles/artifactregistry.writer`):\n\n"
        "```sh\nscripts/build.sh --dry-run\nscripts/build.sh\n```\n\n";
  md += sys.ci ? "Or let CI do it: the pipelines (below) build and push the same images before they deploy.\n"
               : "Or let CI do it: with `ci:` in the spec, trainc writes pipelines that build and push the same "
                 "images before they deploy.\n";
  return md;
}

}  // namespace trainc::scripts
