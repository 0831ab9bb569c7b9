#pragma once
// The cluster `trainc diff --live` asks (inspect/live.h), through kubectl: every request a read
// or a server-side dry run, kubectl run as a child process (run/process.h exchange).
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "inspect/live.h"
#include "run/process.h"

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
  /// One kubectl reads all of them; up to four dry-run them (three objects or more each). What a
  /// kubectl does not answer for (a refusal, a forbidden dry run) is asked again alone, four at
  /// once, for its own answer.
  std::vector<Answer> get_each(const std::vector<std::string>& yamls) override;
  std::vector<Answer> dry_run_each(const std::vector<std::string>& yamls) override;
  /// One kubectl for the types the server knows (kubectl api-resources, asked once).
  Answer list_all(const std::vector<std::string>& types, const std::string& ns, const std::string& selector) override;

 private:
  std::vector<std::string> base() const;
  Answer ask(std::vector<std::string> args, const std::string& input, bool dry_run = false);
  /// kubectl with `args`, its output whatever its exit code; a LiveError when it cannot run or hangs.
  Exchanged run(std::vector<std::string> args, const std::string& input);
  /// What kubectl `args` (a get or a dry run of every document of `docs` at once) answers for each;
  /// those it does not answer for, `alone`'s answer. `read`: a get with --ignore-not-found, whose
  /// success says that the objects it left out are not there.
  std::vector<Answer> batch(const std::vector<std::string>& args, const std::vector<std::string>& docs,
                            const std::function<Answer(const std::string&)>& alone, bool read);
  KubectlTarget t_;
  std::once_flag discovered_;
  std::optional<std::set<std::string>> known_types_;  ///< kubectl api-resources' names; none when it failed
};

/// `diff --live`'s whole run once the spec is compiled: the cluster asked, the result printed
/// (`format`: text or json); its exit code (inspect/live.h live_exit_code, or 2 with an error on
/// stderr when the cluster cannot be asked). `read_only`: no dry run (inspect/live.h LiveOptions).
int diff_live_and_print(const System& sys, const OutputFiles& files, KubectlTarget target, const std::string& format,
                        bool read_only);

}  // namespace trainc
