// `trainrt preflight`: the CLI of preflight.h.
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli_numbers.h"
#include "commands.h"
#include "preflight/preflight.h"
#include "report.h"

namespace trainrt {

void add_preflight(CLI::App& app, Run& run) {
  auto o = std::make_shared<preflight::Options>();
  auto* cmd = app.add_subcommand(
      "preflight",
      "check this pod's GPUs, then run a timed NCCL all-reduce across every GPU of every rank.\n"
      "Order: GPUs (exit 3), rendezvous with rank 0 (exit 4 naming missing ranks), NCCL (exit 1, or 4 on a stall).\n"
      "Prints algbw and busbw (nccl-tests' definitions) and ends with one JSON line.");
  cmd->add_option("--expect-gpus", o->expect_gpus,
                  "GPUs this pod must see (default: at least one; 0: a CPU pod, check only the rendezvous)")
      ->check(whole_number(0, 1024));
  cmd->add_option("--rank", o->rank, "this pod's rank (default: $RANK, else 0)")->check(whole_number(0, 65535));
  cmd->add_option("--world-size", o->world_size, "number of pods (default: $WORLD_SIZE, else 1)")
      ->check(whole_number(1, 65536));
  cmd->add_option("--coordinator", o->coordinator,
                  "rank 0's HOST:PORT; rank 0 listens on PORT (default: $MASTER_ADDR:$MASTER_PORT)");
  cmd->add_option("--bytes", o->bytes, "all-reduce size per GPU: 256MiB, 1GiB, 64M (default 256MiB)");
  cmd->add_option("--iters", o->iters, "timed all-reduces (default 20)")->check(whole_number(1, 1'000'000));
  cmd->add_option("--warmup", o->warmup, "untimed all-reduces first (default 5)")->check(whole_number(0, 1'000'000));
  cmd->add_option("--timeout", o->timeout_seconds,
                  "seconds to wait for the other ranks, and again for NCCL setup and runs (default 120)")
      ->check(real_number(0.001, 604800));
  cmd->callback([o, cmd, &run] {
    const preflight::Env env = [](const char* name) { return std::getenv(name); };
    auto plan = preflight::resolve(*o, env);
    if (auto* usage = std::get_if<std::string>(&plan)) {
      report(*usage);
      run.rc = kUsage;
      return;
    }
    if (run.stop_before_work(*cmd)) return;
    run.rc = preflight::run(std::get<preflight::Plan>(plan), env, std::cout, std::cerr);
  });
}

}  // namespace trainrt
