#pragma once
// The cluster `trainc diff --live` asks (inspect/live.h), through kubectl: every request a read
// or a server-side dry run, kubectl run as a child process (run/process.h exchange).
#include <string>
#include <vector>

#include "inspect/live.h"

namespace trainc {

/// diff --live's cluster through kubectl: the current context of KUBECONFIG unless `context` or
/// `kubeconfig` say otherwise.
struct KubectlTarget {
  std::string kubectl = "kubectl", context, kubeconfig;
  int timeout_s = 30;  ///< each request's (kubectl --request-timeout)
};

class KubectlCluster : public LiveCluster {
 public:
  explicit KubectlCluster(KubectlTarget t) : t_(std::move(t)) {}
  /// The context's name and server, or why the cluster cannot be reached (then `error` is set).
  std::string reach(std::string& error);
  Answer get(const std::string& yaml) override;
  Answer dry_run_apply(const std::string& yaml) override;
  Answer list(const std::string& type, const std::string& ns, const std::string& selector) override;

 private:
  std::vector<std::string> base() const;
  Answer ask(std::vector<std::string> args, const std::string& input, bool dry_run = false);
  KubectlTarget t_;
};

/// `diff --live`'s whole run once the spec is compiled: the cluster asked, the result printed
/// (`format`: text or json); its exit code (inspect/live.h live_exit_code, or 2 with an error on
/// stderr when the cluster cannot be asked). `read_only`: no dry run (inspect/live.h LiveOptions).
int diff_live_and_print(const System& sys, const OutputFiles& files, KubectlTarget target, const std::string& format,
                        bool read_only);

}  // namespace trainc
