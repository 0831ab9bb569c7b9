#include "k8s/entry_script.h"

#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "base/overloaded.h"
#include "base/units.h"
#include "k8s/names.h"
#include "k8s/preflight.h"
#include "model/catalog.h"
#include "model/checkpoints.h"
#include "model/images.h"
#include "base/output_sink.h"
#include "quoting/shell.h"
#include "commands/trainrt_command.h"

namespace trainc {
namespace {

/// A path in the pod as the entry script names it: an absolute one under "$ROOT", which is empty
/// in the pod and the rank's own folder under `trainc run --local`.
std::string pod_path(std::string_view path) {
  return !path.empty() && path.front() == '/' ? "\"$ROOT\"" + sh_quote(path) : sh_quote(path);
}

}  // namespace

std::vector<std::string> trainer_words(const Step& step) {
  return match(
      step.run,
      [&](const Datagen& d) {
        auto words = trainrt::shell_words(trainrt::datagen(d));
        // One shard per pod, or every shard when one pod makes them all; otherwise the script loops.
        if (step.distributed() && d.shards == step.nodes)
          words.push_back(trainrt::shell_word(trainrt::shard_index(trainrt::env(trainrt::kRankVar))));
        return words;
      },
      [&](const XGBoost& x) { return trainrt::shell_words(trainrt::train(x, step.distributed())); },
      [&](const Command& c) {
        std::vector<std::string> words;
        for (const auto& w : c.argv) words.push_back(sh_quote(w));
        return words;
      },
      [&](const Torchrun& t) {
        std::vector<std::string> words{"torchrun"};
        if (!step.distributed()) {
          words.insert(words.end(), {"--standalone", "--nnodes=1"});
        } else {
          // Static rendezvous: rank 0's pod hosts the store; node ranks come from the completion index.
          words.insert(words.end(), {"--nnodes=\"$NNODES\"", "--node-rank=\"$NODE_RANK\"",
                                     "--master-addr=\"$MASTER_ADDR\"", "--master-port=\"$MASTER_PORT\""});
        }
        words.push_back(fmt::format("--nproc-per-node={}", step.procs_per_node));
        words.push_back(pod_path(t.script));
        for (const auto& a : t.args) words.push_back(sh_quote(a));
        return words;
      });
}

namespace {

/// A Dask client waits, with the heartbeat kept fresh, until a worker runs in every pod of its
/// cluster: their nodes may take hours to come (a flex-start pool grows only when capacity is
/// found), and a client that waits on its own (Client.wait_for_workers) prints nothing, so the
/// liveness probe would kill it first. Pods are counted by host, whatever processes each runs.
void wait_for_dask_workers(ShellScript& sh, const ComputeCluster& c) {
  int pods = 0;
  for (const auto& g : c.workers) pods += g.replicas;
  sh.line(fmt::format("log {}", sh_quote(fmt::format("waiting for the {} Dask worker pods of cluster {}", pods, c.name))));
  sh.line(fmt::format("python3 - \"$DASK_SCHEDULER_ADDRESS\" {} <<'PY' 2>&1 | tee -a \"$LOG\"", pods));
  for (const char* l : {"import sys, time",
                        "from urllib.parse import urlparse",
                        "from distributed import Client",
                        "address, want = sys.argv[1], int(sys.argv[2])",
                        "while True:",
                        "    try:",
                        "        with Client(address, timeout='60s') as client:",
                        "            while True:",
                        "                up = len({urlparse(w).hostname for w in client.nthreads()})",
                        "                if up >= want:",
                        "                    sys.exit(0)",
                        "                print(f'{up} of {want} Dask worker pods are up', flush=True)",
                        "                time.sleep(60)",
                        "    except OSError as e:",
                        "        print(f'no Dask scheduler at {address} yet: {e}', flush=True)",
                        "        time.sleep(15)",
                        "PY"})
    sh.line(l);
}

/// Whether a command line runs Python: its program is an interpreter or a Python tool that
/// launches one, or a shell whose script mentions python.
bool runs_python(const std::vector<std::string>& argv) {
  if (argv.empty()) return false;
  const std::string program = argv.front().substr(argv.front().rfind('/') + 1);
  if (program.rfind("python", 0) == 0) return true;
  for (const char* tool : {"torchrun", "accelerate", "deepspeed", "uv", "pip", "pip3", "vllm", "jupyter"})
    if (program == tool) return true;
  if (program == "bash" || program == "sh")
    for (const auto& w : argv)
      if (w.find("python") != std::string::npos) return true;
  return false;
}

/// What the script's preflight checks: every program the script calls beyond bash and coreutils,
/// and, for a step that runs Python, the uid's passwd entry; for torchrun on GPUs, torch's view
/// of them.
k8s::Preflight preflight_of(const System& sys, const Step& step) {
  k8s::Preflight p{step.image, step.name, {}, false, 0};
  auto tool = [&](std::string name, std::string why, std::string fix) {
    for (const auto& t : p.tools)
      if (t.name == name) return;
    p.tools.push_back({std::move(name), std::move(why), std::move(fix)});
  };
  if (!step.inputs.empty() || step.outputs)
    tool("aws", "to sync S3 inputs and outputs",
         injected_tools(sys, step).empty()
             ? "add the AWS CLI to the image (pip install awscli, or the AWS CLI v2 installer)"
             : "the AWS CLI trainc copies in (/opt/trainc-tools/aws) runs only on glibc images: use one, or add the "
               "AWS CLI to the image");
  if (const ComputeCluster* c = sys.compute_cluster(step.cluster))
    match(c->engine, [](const Ray&) {}, [&](const Dask&) {
      tool("python3", "to wait for the workers of the Dask cluster",
           "use an image with python3 and the distributed package of Dask, e.g. the image of the cluster");
      p.python = true;
    });
  if (step.checkpoints) {
    tool("find", "to find the newest checkpoint", "add findutils to the image");
  }
  std::vector<std::string> launcher;
  if (const auto* argv = step.command_line()) launcher = *argv;
  else launcher = {trainer_words(step).front()};  // torchrun or trainrt: a bare word
  const std::string& program = launcher.front();
  if (step.runs_torchrun())
    tool("torchrun", "to launch the processes", "use an image with PyTorch (torchrun comes with torch), e.g. pytorch/pytorch");
  else if (program == "trainrt")
    tool("trainrt", "to run the step", "use the trainrt image (runtime.image, built from docker/trainrt.Dockerfile)");
  else if (program.find('/') == std::string::npos)  // a path may be what the inputs sync brings
    tool(program, "to run the command", "install it in the image, or name it by its full path in the command");
  p.python = p.python || runs_python(launcher);
  if (step.runs_torchrun() && step.gpus > 0) p.torch_gpus = step.gpus;
  return p;
}

/// The step's logs in its outputs folder, one per attempt: trainc-<step>-<UTC start>.log (the step's
/// name is a DNS label: no glob or shell character).
/// Checkpoints oldest first, as "SECONDS PATH" lines: by time, then by name in version order.
constexpr std::string_view kNewestOrder = "sort -k1,1n -k2V";

std::string output_log_glob(const Step& step) { return fmt::format("trainc-{}-*.log", step.name); }

}  // namespace

std::string entry_script(const System& sys, const Step& step) {
  ShellScript sh;
  const std::string state(k8s::kStateDir);
  sh.line("#!/usr/bin/env bash");
  sh.comment(kGeneratedNotice);
  sh.comment(fmt::format("entry script of step '{}' in system '{}'", step.name, sys.name));
  sh.line("set -euo pipefail");
  sh.comment("The root of every absolute path below: empty in a pod; `trainc run --local` sets it to the");
  sh.comment("rank's own folder.");
  sh.line("readonly ROOT=\"${TRAINC_POD_ROOT:-}\"");
  for (const InjectedTool* t : injected_tools(sys, step)) {
    // Copied into the pod by trainc's init container (model/images.h): used when the image has none.
    const std::string bin = fmt::format("{}/{}", k8s::kToolsDir, t->bin);
    sh.open(fmt::format("if ! command -v {} >/dev/null 2>&1 && [ -x {} ]; then", t->name, sh_quote(bin + "/" + t->name)))
        .line(fmt::format("PATH={}:\"$PATH\"", sh_quote(bin)))
        .close("fi");
  }
  sh.line();
  k8s::write_preflight(sh, preflight_of(sys, step));
  if (const Pool* pool = sys.pool(step.pool); pool && pool->rdma) {
    sh.comment("NCCL over the gIB plugin the node's installer put in /usr/local/gib (NCCL_NET=gIB, NCCL_IB_*,");
    sh.comment("the tuner), as GKE's A4 samples set it up; the upstream script may read unset variables.");
    sh.line("set +u");
    sh.line(fmt::format(". {}", pod_path(catalog().rdma().nccl_env_script)));
    sh.line("set -u");
  }
  sh.line();
  sh.line(fmt::format("readonly STATE={}", pod_path(state)));
  sh.line(fmt::format("readonly LOG={}", pod_path(state + "/step.log")));
  sh.line(fmt::format("readonly HEARTBEAT={}", pod_path(step.heartbeat.file)));
  const bool upload_log = step.outputs && step.outputs->log;
  if (upload_log) {  // the output sync carries it to the store; a retry's pod starts a file of its own
    sh.comment("The log's copy the output sync uploads: one per attempt, named by when it started.");
    sh.line(fmt::format("OUTPUT_LOG={}\"$(date -u +%Y%m%dT%H%M%SZ)\".log",
                        pod_path(fmt::format("{}/trainc-{}-", step.outputs->path, step.name))));
    sh.line("readonly OUTPUT_LOG");
  }
  sh.line("mkdir -p \"$STATE\" \"$(dirname \"$HEARTBEAT\")\"");
  sh.line(": >>\"$LOG\"");
  sh.line("touch \"$HEARTBEAT\"");
  if (const Pool* pool = sys.pool(step.pool); step.distributed() && !(pool && pool->tpu)) {
    // Every pod's stable name in rank order, for launchers that list nodes (an MPI hostfile); made
    // here from NNODES rather than written into the pod spec, whose size it would grow with N.
    const std::string job = k8s::job_name(sys, step), first = k8s::pod_hostname(sys, step, 0);
    const std::string prefix = first.substr(0, first.size() - 1);  // the hostname without its index
    sh.comment("NODE_HOSTS: every pod's stable name in rank order, comma-separated");
    sh.line("NODE_HOSTS=");
    sh.line(fmt::format("for ((i = 0; i < NNODES; i++)); do NODE_HOSTS+=\"${{NODE_HOSTS:+,}}\"{}\"$i\".{}; done",
                        sh_quote(prefix), sh_quote(job)));
    sh.line("export NODE_HOSTS");
  }
  sh.line();
  sh.open("log() {").line("printf '[trainc %s] %s\\n' \"$(date -u +%H:%M:%S)\" \"$*\" | tee -a \"$LOG\"").close("}");
  sh.comment("Keeps the heartbeat fresh while this script itself works (syncs), so liveness only");
  sh.comment("judges the trainer. Its PID is kept: nothing is killed by pattern.");
  sh.open("keepalive() {").line("while sleep 30; do touch \"$HEARTBEAT\"; done").close("}");
  sh.line("KEEPALIVE_PID=");
  sh.open("start_keepalive() {").line("keepalive &").line("KEEPALIVE_PID=$!").close("}");
  sh.open("stop_keepalive() {")
      .line("if [ -n \"$KEEPALIVE_PID\" ]; then kill \"$KEEPALIVE_PID\" 2>/dev/null || true; fi")
      .line("KEEPALIVE_PID=")
      .close("}");
  sh.comment("As the container's PID 1 the script would ignore a TERM it does not trap: stopped before its");
  sh.comment("trainer starts, it ends at once (nothing of the trainer's to keep yet).");
  sh.line("trap 'log \"termination requested before the trainer started; exiting\" || true; exit 143' TERM INT");

  const bool uses_s3 = !step.inputs.empty() || step.outputs.has_value();
  if (uses_s3) {
    sh.comment("However this script ends (set -e on a failed sync too), its background loops end with it.");
    sh.line("SYNC_PID=");
    sh.line("trap 'stop_keepalive; if [ -n \"$SYNC_PID\" ]; then kill \"$SYNC_PID\" 2>/dev/null || true; fi' EXIT");
    std::string endpoint;
    for (const auto& in : step.inputs)
      if (const auto* s = sys.store(in.from.store); s && !s->endpoint.empty()) endpoint = s->endpoint;
    if (step.outputs)
      if (const auto* s = sys.store(step.outputs->to.store); s && !s->endpoint.empty()) endpoint = s->endpoint;
    sh.comment(fmt::format("A failed sync is the store's or the network's trouble: it returns {} (EX_TEMPFAIL), which no", kSyncFailedExit));
    sh.comment("noRetryExitCodes holds (check refuses it there), so the step is retried whatever aws exited with.");
    sh.open("s3() {");
    sh.line("local status=0");
    if (endpoint.empty()) sh.line("aws s3 \"$@\" --only-show-errors || status=$?");
    else sh.line(fmt::format("aws --endpoint-url {} s3 \"$@\" --only-show-errors || status=$?", sh_quote(endpoint)));
    sh.line("[ \"$status\" = 0 ] && return 0");
    sh.line(fmt::format("log \"aws s3 $1 failed (exit $status); returning {}\"", kSyncFailedExit));
    sh.line(fmt::format("return {}", kSyncFailedExit));
    sh.close("}");
  }
  sh.line();
  sh.line("start_keepalive");
  for (const auto& in : step.inputs) {
    sh.line(fmt::format("log {}", sh_quote(fmt::format("syncing {} -> {}", in.from.url, in.to))));
    sh.line(fmt::format("mkdir -p {}", pod_path(in.to)));
    sh.line("s3 " + (fmt::format("sync {} {}", sh_quote(in.from.url), pod_path(in.to))));
  }
  if (step.outputs) {
    const auto& o = *step.outputs;
    sh.line(fmt::format("mkdir -p {}", pod_path(o.path)));
    sh.line(fmt::format("log {}", sh_quote(fmt::format("restoring outputs from {}", o.to.url))));
    sh.line("s3 " + (fmt::format("sync {} {}", sh_quote(o.to.url), pod_path(o.path))));
  }
  // A Dask client runs in a pod of its own, beside the workers it needs; a RayJob runs in its cluster.
  if (const ComputeCluster* c = sys.compute_cluster(step.cluster))
    match(c->engine, [](const Ray&) {}, [&](const Dask&) { wait_for_dask_workers(sh, *c); });
  if (!step.checkpoints) sh.line("TRAINC_RESUME_FROM=");
  if (step.checkpoints) {
    const auto& c = *step.checkpoints;
    // Never the step's own logs, which each sync copies into the outputs (that folder may hold
    // them), nor a run's start marker. Times in whole seconds, and within one second the name in
    // version order (kNewestOrder): a store's time is when a sync uploaded the file, and two
    // checkpoints one sync uploads land in either order within it.
    const std::string newest = fmt::format(
        "{{ find -H {} -type f -name {} ! -name '{}*'{} -printf '%Ts %p\\n' 2>/dev/null || true; }}", pod_path(c.path),
        sh_quote(c.pattern), k8s::kRunMarkerPrefix, upload_log ? " ! -name " + sh_quote(output_log_glob(step)) : "");
    if (c.resume_previous) {
      sh.comment("The newest checkpoint by modification time, whichever run wrote it (resumeFrom: previous); the");
      sh.comment("folder need not exist yet: under pipefail, find's failure would otherwise end the script.");
      sh.line(fmt::format("TRAINC_RESUME_FROM=$({} \\", newest));
      sh.line(fmt::format("  | {} | tail -n 1 | cut -d' ' -f2-)", kNewestOrder));
    } else {
      // Each run marks its first start with a file in the checkpoint folder (synced out at once
      // when the folder is in S3, so that a retry finds it with the store's time, as it finds the
      // checkpoints). Only what was written since then is this run's own.
      const bool only_rank0 = step.distributed();
      const std::string& start = c.start_from;
      sh.comment("A run resumes from its own checkpoints only: the newest written since its first start, which");
      sh.comment("the marker below records. A new run (TRAINC_RUN is the pod's trainc.dev/run label) starts");
      sh.comment(start.empty() ? "clean whatever an earlier run left in the store (checkpoints.resumeFrom: previous would continue)."
                               : "from checkpoints.resumeFrom's file, whatever an earlier run left in the store.");
      sh.line(fmt::format("CKPT_DIR={}", pod_path(c.path)));
      sh.line(fmt::format("RUN_MARK=\"$CKPT_DIR\"/{}\"${{TRAINC_RUN:?the pod has no trainc.dev/run label}}\"",
                          k8s::kRunMarkerPrefix));
      sh.open("if [ -e \"$RUN_MARK\" ]; then")
          .line("TRAINC_RESUME_FROM=")
          .line("run_since=$(find \"$RUN_MARK\" -maxdepth 0 -printf '%Ts')")
          .open("while read -r when file; do")
          .line("if [ \"${when%.*}\" -ge \"$run_since\" ]; then TRAINC_RESUME_FROM=$file; fi")
          .close(fmt::format("done < <({} | {})", newest, kNewestOrder))
          .open("if [ -z \"$TRAINC_RESUME_FROM\" ]; then");
      if (start.empty()) {
        sh.line("log \"run $TRAINC_RUN has written no checkpoint yet: starting clean\"");
      } else {
        sh.line(fmt::format("TRAINC_RESUME_FROM={}", pod_path(start)))
            .line("log \"run $TRAINC_RUN has written no checkpoint yet: starting from $TRAINC_RESUME_FROM (checkpoints.resumeFrom)\"");
      }
      sh.close("fi").branch("else");
      if (start.empty()) {
        sh.line("TRAINC_RESUME_FROM=")
            .line("log \"run $TRAINC_RUN starts clean: an earlier run's checkpoints are not resumed (checkpoints.resumeFrom: previous would)\"");
      } else {
        sh.line(fmt::format("TRAINC_RESUME_FROM={}", pod_path(start)))
            .line("log \"run $TRAINC_RUN starts from $TRAINC_RESUME_FROM (checkpoints.resumeFrom): an earlier run's checkpoints are not resumed\"");
      }
      std::string guard;
      if (only_rank0 && step.multislice()) guard = "[ \"$NODE_RANK\" = 0 ] && [ \"$MEGASCALE_SLICE_ID\" = 0 ]";
      else if (only_rank0) guard = "[ \"$NODE_RANK\" = 0 ]";
      // The folder's place in the store when the checkpoints travel with the outputs: what is
      // marked or pruned here is marked or pruned there too (the output sync only adds).
      std::string url;
      if (const auto rel = checkpoints_in_outputs(step)) {
        url = step.outputs->to.url;
        if (url.empty() || url.back() != '/') url += '/';
        if (!rel->empty()) url += *rel + "/";
      }
      if (!guard.empty()) sh.open(fmt::format("if {}; then", guard));
      sh.line("mkdir -p \"$CKPT_DIR\" && : >\"$RUN_MARK\"");
      if (!url.empty()) sh.line("s3 cp \"$RUN_MARK\" " + sh_quote(url));
      sh.comment(fmt::format("The store keeps the checkpoints of the newest {} run(s) (history): an older run's go, with", step.history));
      sh.comment("its marker. A checkpoint belongs to the newest run that had started when it was written.");
      sh.line("mapfile -t run_marks < <(find \"$CKPT_DIR\" -maxdepth 1 -type f -name '" + std::string(k8s::kRunMarkerPrefix) +
              "*' -printf '%T@ %p\\n' | sort -rn | cut -d' ' -f2-)");
      sh.open(fmt::format("if [ \"${{#run_marks[@]}}\" -gt {} ]; then", step.history))
          .line(fmt::format("keep_since=$(find \"${{run_marks[{}]}}\" -maxdepth 0 -printf '%Ts')", step.history - 1))
          .open("while read -r when file; do")
          .line("[ \"${when%.*}\" -lt \"$keep_since\" ] || continue")
          .line(fmt::format("log \"removing checkpoint ${{file#\"$CKPT_DIR\"/}}: its run is older than the {} kept (history)\"", step.history))
          .line("rm -f -- \"$file\"");
      if (!url.empty()) sh.line(fmt::format("s3 rm {}\"${{file#\"$CKPT_DIR\"/}}\"", sh_quote(url)));
      sh.close(fmt::format("done < <({})", newest))
          .open(fmt::format("for file in \"${{run_marks[@]:{}}}\"; do", step.history))
          .line("rm -f -- \"$file\"");
      if (!url.empty()) sh.line(fmt::format("s3 rm {}\"${{file##*/}}\"", sh_quote(url)));
      sh.close("done").close("fi");
      if (!guard.empty()) sh.close("fi");
      sh.close("fi");
      if (!start.empty()) {
        sh.comment("The file a new run starts from comes with an input or a mount: without it, no retry helps.");
        sh.open(fmt::format("if [ \"$TRAINC_RESUME_FROM\" = {} ] && [ ! -f \"$TRAINC_RESUME_FROM\" ]; then", pod_path(start)))
            .line(fmt::format("line=\"trainc: step '{}' starts from checkpoints.resumeFrom $TRAINC_RESUME_FROM, which is not "
                              "there: put the file in the store the step's inputs or mounts bring\"",
                              step.name))
            .line("log \"$line\"")
            .line("printf '%s\\n' \"$line\" >&2")
            .line("if [ -z \"${TRAINC_LOCAL:-}\" ] && [ -w /dev/termination-log ]; then printf '%s\\n' \"$line\" >/dev/termination-log; fi")
            .line(fmt::format("exit {}", kPreflightExit))
            .close("fi");
      }
    }
    sh.open("if [ -n \"$TRAINC_RESUME_FROM\" ]; then")
        .line("log \"resuming from $TRAINC_RESUME_FROM\"")
        .close("fi");
  }
  sh.line("export TRAINC_RESUME_FROM");
  sh.line("touch \"$STATE/ready\"");
  sh.line("stop_keepalive");
  sh.line();

  if (step.outputs) {
    const auto& o = *step.outputs;
    const bool only_rank0 = step.distributed();
    if (only_rank0 && step.multislice()) {
      sh.comment("Host 0 of slice 0 holds rank 0, which writes the outputs; only it syncs them out.");
    } else if (only_rank0) {
      sh.comment("Node 0 holds torch rank 0, which writes the outputs; only it syncs them out.");
    }
    sh.open("sync_outputs() {");
    if (only_rank0 && step.multislice())
      sh.line("if [ \"$NODE_RANK\" != 0 ] || [ \"$MEGASCALE_SLICE_ID\" != 0 ]; then return 0; fi");
    else if (only_rank0)
      sh.line("if [ \"$NODE_RANK\" != 0 ]; then return 0; fi");
    if (upload_log) sh.line("cp \"$LOG\" \"$OUTPUT_LOG\"");
    sh.line("s3 " + (fmt::format("sync {} {}", pod_path(o.path), sh_quote(o.to.url))));
    sh.close("}");
    sh.comment("Stopped (TERM) between syncs, it stops its sleep too; during one, it ends when the sync does.");
    sh.open("periodic_sync() {")
        .line("local sleeper=")
        .line("trap 'if [ -n \"$sleeper\" ]; then kill \"$sleeper\" 2>/dev/null || true; fi; exit 0' TERM")
        .open("while :; do")
        .line(fmt::format("sleep {} &", o.every_seconds))
        .line("sleeper=$!")
        .line("wait \"$sleeper\" || true")
        .line("sleeper=")
        .line(fmt::format("sync_outputs || log {}", sh_quote(fmt::format(
                                                        "periodic sync failed; retrying in {}", format_duration(o.every_seconds)))))
        .close("done")
        .close("}");
    sh.line("periodic_sync &");
    sh.line("SYNC_PID=$!");
  }
  sh.line();
  const std::optional<int> shards = step.shard_count();
  if (shards && step.distributed() && *shards != step.nodes) {
    // Pod i makes shards i, i+nodes, i+2*nodes, ...
    sh.open("datagen=(");
    for (const auto& w : trainer_words(step)) sh.line(w);
    sh.close(")");
    sh.open("make_shards() {")
        .open(fmt::format("for ((shard = NODE_RANK; shard < {}; shard += NNODES)); do", *shards))
        .line("\"${datagen[@]}\" " + trainrt::shell_word(trainrt::shard_index(trainrt::env("shard"))))
        .close("done")
        .close("}");
    sh.line("trainer=(make_shards)");
  } else {
    sh.open("trainer=(");
    for (const auto& w : trainer_words(step)) sh.line(w);
    sh.close(")");
  }
  if (step.runs_tracker() && step.distributed()) {
    // Rank 0 also runs XGBoost's tracker, at the rendezvous address every rank connects to.
    sh.line(fmt::format("if [ \"$NODE_RANK\" = 0 ]; then trainer+=({}); fi", trainrt::shell_word(trainrt::tracker_serve())));
  }
  if (step.gpu_preflight() && step.gpus > 0) {
    // A bad GPU or a rank that cannot reach the others fails here in seconds, not hours into training.
    sh.line(fmt::format("log {}", sh_quote("preflight: GPUs and NCCL all-reduce")));
    sh.line(fmt::format("{} 2>&1 | tee -a \"$LOG\"",
                        fmt::join(trainrt::shell_words(trainrt::preflight(step.gpus, step.distributed())), " ")));
  }
  if (step.checkpoints && !step.checkpoints->resume_flag.empty()) {
    sh.open("if [ -n \"$TRAINC_RESUME_FROM\" ]; then")
        .line(fmt::format("trainer+=({} \"$TRAINC_RESUME_FROM\")", sh_quote(step.checkpoints->resume_flag)))
        .close("fi");
  }
  sh.line(fmt::format("cd {}", pod_path(step.workdir)));
  sh.line("log \"starting: ${trainer[*]}\"");
  sh.comment("Every line the trainer prints lands in $LOG, whose age the liveness probe checks.");
  sh.line("\"${trainer[@]}\" > >(tee -a \"$LOG\") 2>&1 &");
  sh.line("TRAINER_PID=$!");
  sh.comment("A stop (TERM to PID 1 only) is passed on to the trainer; this script then goes on to the final");
  sh.comment("sync within the pod's termination grace.");
  sh.line("trap 'log \"termination requested; stopping the trainer\" || true; kill -TERM \"$TRAINER_PID\" 2>/dev/null || true' TERM INT");
  sh.line("status=0");
  sh.line("wait \"$TRAINER_PID\" || status=$?");
  sh.comment("A trapped signal ends the first wait early: wait until the trainer has really exited.");
  sh.line("while kill -0 \"$TRAINER_PID\" 2>/dev/null; do wait \"$TRAINER_PID\" || status=$?; done");
  sh.line("log \"trainer exited with status $status\"");
  if (step.runs_torchrun()) {
    // torchrun exits 1 however a worker failed; its error summary (torch.distributed.elastic
    // ChildFailedError) names the first failure's exit code, or -N for signal N. The pod exits with
    // that, so the step's noRetryExitCodes judge the trainer's own code.
    sh.comment("torchrun exits 1 whichever way a worker failed: exit with its first failure's code instead");
    sh.comment("(\"Root Cause (first observed failure)\" ... \"exitcode : N\"; a signal N as 128+N).");
    sh.open("if [ \"$status\" = 1 ]; then")
        .line("first=$(awk '/^Root Cause \\(first observed failure\\):/ { seen = 1; code = \"\" }")
        .line("  seen && code == \"\" && $1 == \"exitcode\" && $2 == \":\" { code = $3 } END { print code }' \"$LOG\")")
        .open("case $first in")
        .line("-[1-9]*) status=$((128 - first)) ;;")
        .line("[1-9]*) status=$first ;;")
        .close("esac")
        .open("if [ \"$status\" != 1 ]; then")
        .line("log \"torchrun's first failed worker exited with $first: exiting with $status\"")
        .close("fi")
        .close("fi");
  }
  if (step.outputs) {
    sh.line();
    sh.line("trap 'log \"termination requested again; the final sync goes on until the grace period ends\" || true' TERM INT");
    sh.line("kill \"$SYNC_PID\" 2>/dev/null || true");
    sh.line("wait \"$SYNC_PID\" 2>/dev/null || true");
    sh.line("SYNC_PID=");
    sh.line("start_keepalive");
    sh.line(fmt::format("log {}", sh_quote("final sync of outputs to " + step.outputs->to.url)));
    sh.comment("A failed final sync fails a step whose trainer succeeded; a trainer's own failure keeps its code.");
    sh.line(fmt::format("sync_outputs || {{ [ \"$status\" != 0 ] || status={}; }}", kSyncFailedExit));
    sh.line("stop_keepalive");
  }
  sh.line("exit \"$status\"");
  return sh.text();
}

}  // namespace trainc
