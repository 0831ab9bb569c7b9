#pragma once
// Child processes of `trainc run --local`: started in a process group of their own, so that what
// they start in turn (torchrun's ranks, an entry script's background syncs, a Dask worker's
// nanny) goes when they go, and loopback ports for them to listen on.
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace trainc {

/// What a child's environment starts from: this process's (tools trainc runs itself), or nothing
/// (a spec's code, which must not read the caller's shell).
enum class Inherit { caller, nothing };

/// A running child process, leader of its own process group; the whole group is stopped (TERM,
/// then KILL after a grace period) if still running when dropped.
class Child {
 public:
  /// Starts argv[0] (looked up on `env`'s PATH, else this process's, unless it has a '/'), with
  /// `env` added to this process's environment (or alone, with Inherit::nothing) and in `cwd` when
  /// given. On failure `started()` is false and `error` says why.
  Child(const std::vector<std::string>& argv, std::string& error, const std::map<std::string, std::string>& env = {},
        const std::filesystem::path& cwd = {}, Inherit inherit = Inherit::caller);
  Child(Child&& o) noexcept : pid_(o.pid_), group_(o.group_) { o.pid_ = o.group_ = -1; }
  Child& operator=(Child&&) = delete;
  ~Child() { stop(); }
  /// Waits for the process; its exit code, or 128 + signal. Whatever the process left running in
  /// its group is stopped then. An interrupt (catch_interrupts) stops the group and returns 128 +
  /// the interrupt's signal.
  int wait();
  /// The exit code (or 128 + signal) if the process has ended, without waiting.
  std::optional<int> poll();
  /// Who gets the TERM that starts a stop: the whole group (trainc's own tools), the leader alone
  /// (a pod: the kubelet signals the container's PID 1 only, and what it started hears nothing
  /// until the KILL), or no one (the caller already sent it, to several children at once).
  enum class Term { group, leader, sent };
  /// Stops the process group: TERM (to `term`), and KILL for what is still there after `grace_ms`
  /// (at once when an interrupt is caught meanwhile). The process's exit code (or 128 + signal)
  /// when it was still running, else nothing.
  std::optional<int> stop(int grace_ms = 3000, Term term = Term::group);
  /// Sends SIGTERM to the leader alone, as the kubelet does to a container's PID 1.
  void terminate();
  /// Sends `sig` to the whole group (SIGKILL: the step dies as a preempted pod does).
  void signal(int sig);
  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  int reap(int status);
  pid_t pid_ = -1;
  pid_t group_ = -1;
};

/// From now on SIGINT and SIGTERM only set a flag, which the waits here check: a wait then stops
/// its child's group and returns 128 + the signal, so that trainc returns through the destructors
/// that stop everything else it started rather than dying with its children still running.
void catch_interrupts();
/// The signal catch_interrupts caught, or 0.
int interrupted();

/// Runs argv to completion, printing it first as `  $ ENV... ARGV` (with Inherit::nothing, `env` is
/// its whole environment and only ARGV is printed); its exit code (2 if it could not start).
int run_one(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
            const std::filesystem::path& cwd = {}, Inherit inherit = Inherit::caller);

/// Runs argv to completion with its stdout captured (stderr to /dev/null): what it printed when it
/// exited 0, else nullopt. For short queries of a tool (a package's version), not for steps.
std::optional<std::string> capture(const std::vector<std::string>& argv,
                                   const std::map<std::string, std::string>& env = {},
                                   Inherit inherit = Inherit::caller);

/// What a program exchange() ran answered.
struct Exchanged {
  int code = 0;  ///< its exit code, 128 + signal; -1 when it could not start, -2 when it timed out
  std::string out, err;
};
/// Runs argv to completion with `input` on its stdin and its stdout and stderr captured, each up to
/// `limit` bytes (more is dropped); it is killed after `timeout_s` seconds. For a tool trainc asks
/// (kubectl), not for steps.
Exchanged exchange(const std::vector<std::string>& argv, const std::string& input, int timeout_s,
                   size_t limit = 64u << 20);

/// Runs `body` in a child that is the first process (pid 1) of a new PID namespace with its own
/// /proc, and returns its exit code (128 + the signal when it was killed): when that child ends,
/// the kernel kills every process left in the namespace, so nothing it started outlives it, however
/// it detached itself (setsid, a double fork, a chain forking and exiting faster than a scan of
/// /proc can follow). SIGINT and SIGTERM sent to this process are passed on to it. nullopt, with
/// `why_not`, when the namespaces cannot be made here (no CAP_SYS_ADMIN and no unprivileged user
/// namespaces, a seccomp filter, a chroot): then nothing has run.
std::optional<int> run_in_pid_namespace(const std::function<int()>& body, std::string& why_not);

/// Makes this process the reaper of its orphaned descendants (PR_SET_CHILD_SUBREAPER): a process
/// a step detaches (setsid, a double fork) is then still below it, to be found and stopped.
/// Returns the processes already below it (trainc's own, such as a Jsonnet server), to spare.
std::set<pid_t> adopt_orphans();

/// Stops every process below this one but `spare` and their subtrees (TERM, then KILL after
/// `grace_ms`), and reaps them and its other exited children; the pids it had to stop. For when
/// no Child is left alive.
std::vector<pid_t> end_descendants(const std::set<pid_t>& spare, int grace_ms = 2000);

/// A TCP port on loopback that nothing listens on (the kernel's pick, released for the caller).
int free_port();

/// Whether something accepts connections on 127.0.0.1:port within `seconds`.
bool accepts(int port, int seconds);

/// The status code of `GET path` on http://127.0.0.1:port (HTTP/1.0, 5 s to answer), or nothing
/// when nothing answers.
std::optional<int> http_status(int port, const std::string& path);

}  // namespace trainc
