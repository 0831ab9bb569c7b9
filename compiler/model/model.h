#pragma once
// The typed model (trainc's IR): what lowering makes of a validated spec, with every default
// applied and every reference resolved. Each node keeps `ptr`, the JSON pointer of the spec value
// it came from, so later phases can report at the user's line.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trainc {

using StringMap = std::map<std::string, std::string>;

struct Accelerator {
  std::string type;  ///< node label value, e.g. nvidia-tesla-t4
  int count = 0;     ///< GPUs on each node
};

struct Pool {
  std::string name, ptr;
  std::string machine;
  std::optional<Accelerator> accelerator;
  int nodes = 1;
};

struct S3Store {
  std::string name, ptr;
  std::string bucket, prefix, region, endpoint, credentials_secret;
};

/// "<store>:/path" resolved against the store: `url` is the full s3:// address.
struct StoreRef {
  std::string store, path, url, ptr;
};

struct Sync {
  StoreRef from;
  std::string to;  ///< absolute path in the pod
  std::string ptr;
};

struct Outputs {
  std::string path;  ///< absolute path in the pod
  StoreRef to;
  int every_seconds = 600;
  std::string ptr;
};

struct Checkpoints {
  std::string path;  ///< absolute path in the pod, inside outputs.path
  std::string pattern = "*";
  std::string resume_flag;
  std::string ptr;
};

struct Torchrun {
  std::string script;  ///< absolute path in the pod
  std::vector<std::string> args;
  int port = 29500;
};

struct Resources {
  StringMap requests, limits;  ///< cpu, memory, ... as Kubernetes quantities
};

struct Heartbeat {
  int max_age_seconds = 3600;
  std::string file;  ///< absolute path; the step's log unless the spec names a file
};

struct Step {
  std::string name, ptr;
  std::vector<std::string> needs;
  std::string image, image_pull_policy = "IfNotPresent";
  std::string pool;  ///< "" when the step names no pool
  int nodes = 1, gpus = 0, procs_per_node = 1;
  std::string workdir = "/workspace";
  std::optional<Torchrun> torchrun;
  std::vector<std::string> command;
  StringMap env;
  Resources resources;
  std::string shm;
  int retries = 2;
  std::optional<int> timeout_seconds;
  Heartbeat heartbeat;
  std::vector<Sync> inputs;
  std::optional<Outputs> outputs;
  std::optional<Checkpoints> checkpoints;
  StringMap labels, annotations;

  bool distributed() const { return nodes > 1; }
};

struct System {
  std::string name, ptr;
  std::string ns;
  bool owns_namespace = true;  ///< false when the spec names an existing namespace
  std::string service_account;
  StringMap labels;
  std::map<std::string, Pool> pools;
  std::map<std::string, S3Store> stores;
  std::vector<Step> steps;  ///< in dependency order (every step after the steps it needs)

  const Pool* pool(const std::string& name) const;
  const S3Store* store(const std::string& name) const;
};

}  // namespace trainc
