#pragma once
// Command lines the pods run, built once from the model (trainrt here; the Dask engine's in
// dask_command.h): the entry script quotes them for bash, the
// local runner resolves them into argv, and the Kubernetes emitter makes exec probes of them.
// tests/trainrt_args_test.sh feeds every emitted command to `trainrt --check-args`, so a flag
// renamed on one side fails in CI rather than in a pod.
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.h"

namespace trainc::trainrt {

/// The pod environment a multi-node step's flags read (set on the container by the k8s emitter).
inline constexpr std::string_view kRankVar = "NODE_RANK";
inline constexpr std::string_view kWorldVar = "NNODES";
inline constexpr std::string_view kAddrVar = "MASTER_ADDR";
inline constexpr std::string_view kPortVar = "MASTER_PORT";

/// A piece of a flag's value: literal text, or an environment variable (plus a constant:
/// {MASTER_PORT, +1} is $((MASTER_PORT + 1)) in bash) that the pod or the local runner supplies.
struct Part {
  std::string text;
  bool env = false;
  int plus = 0;
};
Part lit(std::string text);
Part env(std::string_view name, int plus = 0);

struct Flag {
  std::string name;         ///< without the leading "--"
  std::vector<Part> value;  ///< empty: a switch such as --no-hypercube
};

struct Command {
  std::vector<std::string> words;  ///< "trainrt", "<subcommand>" [, "<mode>"]; positional words too
  std::vector<Flag> flags;
};

/// Where a store place is for the process: its pod path, or a local folder for `run --local`.
using PathOf = std::function<std::string(const StoreLoc&)>;
std::string pod_path_of(const StoreLoc& loc);

/// `trainrt datagen`, without the shard selection (the entry script decides that per pod).
Command datagen(const Datagen& d, const PathOf& where = pod_path_of, int threads = 0);
/// `--shard-index=<value>`: which shard this process makes.
Flag shard_index(Part value);
/// `trainrt train`; a distributed step's ranks read rank, world size and tracker from the env.
Command train(const XGBoost& x, bool distributed, const PathOf& where = pod_path_of, int threads = 0);
/// `--tracker-serve=$MASTER_PORT`: rank 0 also serves XGBoost's tracker.
Flag tracker_serve();
/// `trainrt preflight`: GPUs, then (multi-node) an NCCL all-reduce, coordinated one port above
/// the rendezvous port.
Command preflight(int gpus, bool distributed);
/// `trainrt probe live`: fails when the heartbeat file is older than `max_age_seconds`.
Command probe_live(const std::string& heartbeat, int max_age_seconds);
/// `trainrt probe ready`: holds when every path exists.
Command probe_ready(const std::vector<std::string>& paths);

/// Bash words: '--rows=5' quoted as needed, --rank="$NODE_RANK" for environment values.
std::vector<std::string> shell_words(const Command& c);
std::string shell_word(const Flag& f);
/// argv with --name=value flags and environment values taken from `env`; a variable missing
/// there is a bug (std::logic_error).
std::vector<std::string> argv(const Command& c, const std::map<std::string, std::string>& env = {});
/// argv with "--name" and "value" as separate words, as exec probes are written; literal values only.
std::vector<std::string> exec_argv(const Command& c);
/// A container's command as Kubernetes expands it: environment values as $(NAME).
std::vector<std::string> container_argv(const Command& c);

}  // namespace trainc::trainrt
