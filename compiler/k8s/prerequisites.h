#pragma once
// What must exist in the cluster before apply that trainc neither creates nor deletes: the
// namespace and service account a spec names as existing ones, and every Secret a pod reads (an
// env `secretRef`, vLLM's `hfToken`, an S3 store's `credentialsSecret`). One list, read by the
// runbook's "Before you apply" (with the command that makes each) and by apply.sh, which checks
// each one before it applies anything: a pod naming a missing Secret waits in
// CreateContainerConfigError until apply.sh's waits give up.
#include <set>
#include <string>
#include <vector>

#include "commands/command.h"
#include "model/model.h"

namespace trainc::k8s {

/// An object the pods name that trainc does not create.
struct Prerequisite {
  enum class Kind { kNamespace, kServiceAccount, kSecret };
  Kind kind = Kind::kSecret;
  std::string name;
  /// A Secret's keys the pods read, sorted. For a Secret taken whole (envFrom), the keys its
  /// reader needs there (an S3 store's: the AWS CLI's access key pair).
  std::set<std::string> keys;
  std::vector<std::string> users;  ///< who reads it, in words: "step 'train' (HF_TOKEN)"
  bool whole = false;              ///< every key becomes an environment variable (envFrom)
  /// kind/name as kubectl names it: "secret/hf", "namespace/ml", "serviceaccount/editor".
  std::string ref() const;
};

/// Every object the system's pods name that trainc does not create: the namespace and service
/// account when the spec names existing ones, then the Secrets by name.
std::vector<Prerequisite> prerequisites(const System& sys);

/// The Secrets a step's pods take whole through envFrom: the credentials of the S3 stores it
/// syncs (the pod spec and prerequisites() both read this).
std::set<std::string> store_secrets(const System& sys, const Step& step);

/// The command that makes `p` in the system's namespace. A Secret's values are read at a silent
/// prompt, one per key, so that none is written in the runbook, a script or the shell's history.
CommandLine create_command(const KubeTarget& t, const System& sys, const Prerequisite& p);

}  // namespace trainc::k8s
