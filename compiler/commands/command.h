#pragma once
// One typed builder for the gcloud, kubectl and helm commands trainc writes: in the scripts, the
// CI pipelines and the runbook. A command is its program and arguments as shell words: a literal
// is quoted when added (arg, opt), a word with variable references is added as written (word,
// flag). It renders as shell lines for a script (a long command continues with one flag a line)
// or as one line, which the runbook's code blocks and CI one-liners hold.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "model/catalog.h"
#include "model/model.h"

namespace trainc {

struct CommandLine {
  std::vector<std::string> words;  ///< the program, then its arguments: stay on the first line
  std::vector<std::string> flags;  ///< each gets a line of its own when the command does not fit on one
  bool spaced = false;             ///< flags are written `--name VALUE` (not `--name=VALUE`)
  std::vector<std::size_t> breaks;  ///< flags line() starts a continuation line at
  /// The arguments as the program receives them, while every one was added as a literal (argv()).
  std::vector<std::string> literals;
  bool shell_words = false;  ///< an argument was added as a shell word: there is no argv()

  /// A literal argument, quoted for the shell when it needs to be.
  CommandLine& arg(std::string_view literal);
  /// An argument that is a shell word already ("$PROJECT_ID", a quoted literal).
  CommandLine& word(std::string shell_word);
  CommandLine& flag(std::string_view name);
  /// A flag whose value is a shell word already.
  CommandLine& flag(std::string_view name, const std::string& shell_word);
  /// A flag whose value is literal text, quoted for the shell when it needs to be.
  CommandLine& opt(std::string_view name, std::string_view literal);

  /// The command's lines: `before` and the words on the first, each flag on one of its own when
  /// the whole is longer than `width`, and `after` at the end of the last.
  std::vector<std::string> lines(std::string_view before = {}, std::string_view after = {},
                                 std::size_t width = 100) const;
  /// Starts a continuation line at the next flag, where line() renders the command (the runbook
  /// groups a long command's flags by meaning).
  CommandLine& next_line();
  /// The lines next_line() asked for, each but the last ending ` \`, without their indentation.
  std::vector<std::string> parts() const;
  /// The command on one line, or on the lines next_line() asked for (` \`, then two spaces).
  std::string line() const;
  /// The program and arguments unquoted, as an exec form takes them (Cloud Build's entrypoint and
  /// args). Throws std::logic_error for a command with a shell word: only a shell can expand it.
  std::vector<std::string> argv() const;
};

/// Where kubectl and helm commands act, and how they name the output's k8s/ files.
struct KubeTarget {
  std::string context;  ///< the kubectl context as a shell word; "" for the current one
  /// The shell variable holding the k8s/ folder (a script's K8S_DIR); "" names files as the output
  /// folder does (k8s/x.yaml), for commands run from it.
  std::string k8s_dir;
  bool spaced = false;  ///< flags written `--name VALUE`, as the runbook shows them
};

namespace cmd {

CommandLine gcloud(std::initializer_list<std::string_view> literals);
/// helm, before the target's flags (helm_install adds them).
CommandLine helm(const KubeTarget& t, std::initializer_list<std::string_view> literals = {});
/// kubectl with the target's context.
CommandLine kubectl(const KubeTarget& t, std::initializer_list<std::string_view> literals);
/// `kubectl apply` of output files ("k8s/x.yaml"), one -f each.
CommandLine apply_files(const KubeTarget& t, const std::vector<std::string>& files);
/// A pinned release manifest applied as is; server-side for a controller, as its install guide says.
CommandLine apply_manifest(const KubeTarget& t, const Manifest& m, bool server_side);
/// Blocks until every Deployment of the manifest's namespace is available (its webhooks answer).
CommandLine wait_deployments(const KubeTarget& t, const Manifest& m);
/// A server-side `kubectl apply` of an output file beside k8s/ ("addons/x.yaml"): an object that
/// amends what a release manifest applied, with the same field manager.
CommandLine apply_addon_file(const KubeTarget& t, std::string_view file);
/// Sets annotation `key` of Deployment `name`'s pod template to `value`: its pods roll when the
/// value changes, and only then (as a Helm chart's configuration checksum does).
CommandLine annotate_pod_template(const KubeTarget& t, const std::string& ns, const std::string& name,
                                  const std::string& key, const std::string& value);
/// Blocks until Deployment `name` has rolled out, within `timeout` ("300s").
CommandLine rollout_status(const KubeTarget& t, const std::string& ns, const std::string& name, const std::string& timeout);
/// `kubectl port-forward` of a Service's ports ("8000:8000") to the workstation.
CommandLine port_forward(const KubeTarget& t, const std::string& ns, const std::string& service,
                         const std::vector<std::string>& ports);
/// Prints the external IP of the load balancer of Service `service` (the ingress gateway's).
CommandLine load_balancer_ip(const KubeTarget& t, const std::string& service, const std::string& ns);
/// `helm upgrade --install` of a chart pinned in the catalog: idempotent, and waits.
CommandLine helm_install(const KubeTarget& t, const Operator& op);
/// `helm uninstall` of the chart's release; with `wait`, until its resources are gone.
CommandLine helm_uninstall(const KubeTarget& t, const Operator& op, bool wait);

/// Makes the Terraform state bucket (uniform access), then turns on its object versioning.
std::vector<CommandLine> state_bucket(const Gcp& g);
/// Prints the number of the project `project_word` (a shell word) names.
CommandLine project_number(const std::string& project_word);
/// Enables the Google APIs `services` in the project.
CommandLine enable_apis(const std::string& project, const std::vector<std::string>& services);
/// Prints each quota of the region (shell word `region_word`): metric, limit and usage as CSV.
CommandLine region_quotas(const std::string& region_word, const std::string& project_word);
/// Submits a Cloud Build config from the repository root (the source is ".").
CommandLine builds_submit(const std::string& config, const std::string& region, const std::string& substitutions);

/// Copies the folder `from_word` (a shell word: a local path or gs://…) into `to` (gs://…),
/// adding and replacing objects, deleting none; symbolic links are skipped, never followed.
CommandLine storage_rsync(const std::string& from_word, const std::string& to);
/// Lists the object `url` (gs://…): fails when there is none.
CommandLine storage_ls(const std::string& url);

/// A request to `url_word` (a shell word: it may name $GATEWAY_IP) with the Host header `host`
/// ("" for none), as the runbook's calling examples write it.
CommandLine curl(const std::string& url_word, const std::string& host);

}  // namespace cmd
}  // namespace trainc
