#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/data_path.h"
#include "base/overloaded.h"
#include "base/spelling.h"
#include "checks/checks.h"
#include "k8s/names.h"
#include "model/checkpoints.h"

namespace trainc {
namespace {

/// checkpoints.resumeFrom naming a file: one that an input syncs in or a mount holds, outside the
/// checkpoint folder (which runs write and prune). A word that is neither ("previus") is likely a
/// misspelled keyword rather than a file.
void check_start_file(const Step& step, const Document& doc, Diagnostics& diags) {
  const Checkpoints& c = *step.checkpoints;
  const std::string file = c.start_from, ptr = ptr_key(c.ptr, "resumeFrom");
  const std::string written =
      path_within(file, step.workdir) && file != step.workdir ? file.substr(step.workdir.size() + (step.workdir == "/" ? 0 : 1)) : file;
  std::vector<std::string> places;
  bool brought = false;
  for (const auto& in : step.inputs) {
    places.push_back(fmt::format("input {} syncs into {}", in.from.url, in.to));
    brought = brought || (file != in.to && path_within(file, in.to));
  }
  for (const auto& m : step.mounts) {
    places.push_back(fmt::format("store '{}' is mounted at {}", m.store, m.path));
    brought = brought || (file != m.path && path_within(file, m.path));
  }
  if (path_within(file, c.path)) {
    doc.error(diags, ptr,
              fmt::format("resumeFrom '{}' is in the checkpoint folder '{}', which the step's runs write and prune; "
                          "keep the file a new run starts from elsewhere (an input or a mount), or use resumeFrom: "
                          "previous to continue from the newest checkpoint there",
                          written, c.path),
              Anchor::value);
  } else if (!brought) {
    const std::string where = places.empty() ? "the step has no inputs or mounts" : fmt::format("{}", fmt::join(places, "; "));
    doc.error(diags, ptr,
              fmt::format("resumeFrom '{}' is neither 'run', 'previous' nor a file the step's inputs or mounts bring "
                          "({}): add an input that syncs it in, or mount its bucket{}",
                          written, where, did_you_mean(written, {"run", "previous"})),
              Anchor::value);
  }
}

/// A step on a schedule: a cron expression the CronJob controller reads, a step a CronJob can make
/// (one pod of a Job), a CronJob name within Kubernetes' 52 characters, and nothing that waits for
/// it to finish (it never does).
void check_schedule(const System& sys, const Step& step, const Document& doc, Diagnostics& diags) {
  const Schedule& sc = *step.schedule;
  if (const auto problem = cron_problem(sc.cron))
    doc.error(diags, ptr_key(sc.ptr, "cron"), fmt::format("schedule '{}': {}", sc.cron, *problem), Anchor::value);
  std::string why;
  if (sys.compute_cluster(step.cluster) && !sys.compute_cluster(step.cluster)->steps_have_own_pods())
    why = fmt::format("it runs on Ray cluster '{}' as a RayJob", step.cluster);
  else if (k8s::runs_as_jobset(sys, step))
    why = "it runs as a JobSet (a TPU slice, or pods that restart as one)";
  else if (step.distributed())
    why = fmt::format("its {} pods find each other through a Service named after their Job, which a CronJob's Jobs, "
                      "named at each time, do not have",
                      step.nodes);
  if (!why.empty())
    doc.error(diags, sc.ptr,
              fmt::format("step '{}' cannot run on a schedule: {}, and Kubernetes schedules only Jobs (a CronJob); run "
                          "it once per apply, or schedule a one-pod step",
                          step.name, why),
              Anchor::key);
  const std::string name = k8s::step_base_name(sys, step);
  if (name.size() > 52)
    doc.error(diags, sc.ptr,
              fmt::format("the CronJob of step '{}' would be named '{}', {} characters; Kubernetes allows 52 (its "
                          "controller adds 11 to name each Job): shorten the step's or the system's name",
                          step.name, name, name.size()),
              Anchor::key);
  if (sc.starting_deadline_seconds < 10)
    doc.error(diags, ptr_key(sc.ptr, "startingDeadline"),
              "a starting deadline under 10s may never be met: the CronJob controller looks every 10 seconds",
              Anchor::value);
  const auto refuse_need = [&](const std::string& who, const std::string& ptr, const std::vector<std::string>& needs) {
    for (size_t i = 0; i < needs.size(); ++i)
      if (needs[i] == step.name)
        doc.error(diags, ptr_index(ptr_key(ptr, "needs"), i),
                  fmt::format("{} needs step '{}', which runs on a schedule and so never finishes for it to wait on; "
                              "drop it from needs, or take the schedule off '{}'",
                              who, step.name, step.name),
                  Anchor::value);
  };
  for (const auto& other : sys.steps) refuse_need(fmt::format("step '{}'", other.name), other.ptr, other.needs);
  for (const auto& [name, svc] : sys.services) refuse_need(fmt::format("service '{}'", name), svc.ptr, svc.needs);
}

/// Names the entry script or the Job set for the trainer; a spec that sets them breaks rendezvous.
const std::vector<std::string>& reserved_env(const Step& step) {
  static const std::vector<std::string> single{"PYTHONUNBUFFERED", "TRAINC_RESUME_FROM"};
  static const std::vector<std::string> multi{"PYTHONUNBUFFERED", "TRAINC_RESUME_FROM", "NNODES", "NODE_RANK",
                                              "MASTER_ADDR", "MASTER_PORT"};
  return step.distributed() ? multi : single;
}

/// The image each kind needs; multi-node only where something coordinates the pods. (Lowering
/// has already made sure exactly one kind is set.)
void check_kind(const System& sys, const Step& step, const Document& doc, Diagnostics& diags) {
  const Pool* pool = sys.pool(step.pool);
  const bool tpu = pool && pool->tpu;
  // A TPU slice runs one program per host, which finds the others itself (JAX, PyTorch/XLA).
  auto not_on_tpu = [&](std::string_view why) {
    if (tpu)
      doc.error(diags, ptr_key(step.ptr, step.kind()),
                fmt::format("step '{}' is on TPU pool '{}', but {}; write the program as 'command' (e.g. [python3, "
                            "train.py]), which the JobSet starts on every host of every slice",
                            step.name, pool->name, why),
                Anchor::key);
  };
  auto needs_runtime_image = [&] {
    if (step.image.empty())  // lowering falls back to runtime.image, so neither was given
      doc.error(diags, ptr_key(step.ptr, step.kind()),
                fmt::format("'{}' steps run the trainrt image: set runtime: {{image: ...}} (build it from "
                            "docker/trainrt.Dockerfile in the output) or the step's 'image'",
                            step.kind()),
                Anchor::key);
  };
  auto needs_user_image = [&] {
    if (step.image.empty())
      doc.error(diags, step.ptr, fmt::format("missing required key 'image' in {}", ptr_display(step.ptr)), Anchor::key);
  };
  match(
      step.run,
      [&](const Torchrun&) {
        needs_user_image();
        not_on_tpu("torchrun starts GPU or CPU processes");
      },
      [&](const Command&) {
        // On many nodes the command coordinates itself from the environment every pod gets (NNODES,
        // NODE_RANK, MASTER_ADDR, MASTER_PORT, NODE_HOSTS; docs/spec-v1.md, "Any command on many nodes").
        needs_user_image();
      },
      [&](const Datagen& d) {
        needs_runtime_image();
        not_on_tpu("trainrt runs on CPUs and GPUs");
        if (d.shards % step.nodes != 0)
          doc.error(diags, ptr_key(ptr_key(step.ptr, "datagen"), "shards"),
                    fmt::format("{} shards do not divide among {} pods; use a multiple of {}", d.shards, step.nodes,
                                step.nodes));
      },
      [&](const XGBoost&) {
        needs_runtime_image();
        not_on_tpu("trainrt runs on CPUs and GPUs");
      });
}

}  // namespace

void check_steps(const System& sys, const Document& doc, Diagnostics& diags) {
  // Judged on the document, not the system (after errors elsewhere the system may hold none of its
  // steps), and not after schema errors (a misspelled 'pipeline' is reported as that).
  const auto declares = [&](const char* key) { return doc.root.contains(key) && !doc.root[key].empty(); };
  if (!declares("pipeline") && !declares("clusters") && !declares("services") && !sys.gcp && doc.invalid.empty())
    doc.error(diags, doc.root.contains("pipeline") ? "/pipeline" : "",
              "the spec has no steps and no 'gcp' infrastructure, so there is nothing to generate; add a step to "
              "'pipeline' or a 'gcp' section");
  for (const auto& step : sys.steps) {
    check_kind(sys, step, doc, diags);
    const Mount* ckpt_mount = checkpoint_mount(step);
    if (step.checkpoints && !step.outputs && !ckpt_mount) {
      doc.error(diags, step.checkpoints->ptr,
                "'checkpoints' needs 'outputs' (an S3 store synced in and out) or a writable GCS mount that holds "
                "its path",
                Anchor::key);
    } else if (step.checkpoints && !ckpt_mount && !path_within(step.checkpoints->path, step.outputs->path)) {
      doc.error(diags, ptr_key(step.checkpoints->ptr, "path"),
                fmt::format("checkpoints path '{}' is outside outputs path '{}', so checkpoints would never be "
                            "saved; put them under '{}'",
                            step.checkpoints->path, step.outputs->path, step.outputs->path),
                Anchor::value, {doc.note(ptr_key(step.outputs->ptr, "path"), "outputs path set here")});
    }
    if (step.checkpoints && !step.checkpoints->start_from.empty()) check_start_file(step, doc, diags);
    if (step.schedule) check_schedule(sys, step, doc, diags);
    if (!step.mounts.empty() && sys.pod_service_account().empty())
      doc.error(diags, ptr_key(step.ptr, "mounts"),
                "GCS mounts need an identity the bucket trusts: add 'identity' (a service account bound with "
                "Workload Identity) or 'serviceAccount'",
                Anchor::key);
    for (size_t i = 0; i < step.mounts.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (step.mounts[i].path == step.mounts[j].path)
          doc.error(diags, ptr_key(step.mounts[i].ptr, "path"),
                    fmt::format("two mounts at '{}'; each mount needs its own path", step.mounts[i].path), Anchor::value,
                    {doc.note(ptr_key(step.mounts[j].ptr, "path"), "first mounted here")});
    for (const auto& name : reserved_env(step)) {
      if (step.env.count(name))
        doc.error(diags, ptr_key(ptr_key(step.ptr, "env"), name),
                  fmt::format("env '{}' is set by trainc for this step; remove it", name), Anchor::key);
    }
  }
}

}  // namespace trainc
