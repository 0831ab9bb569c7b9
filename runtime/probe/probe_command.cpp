// `trainrt probe live|ready`: the exec probes of the generated pods (see probe.h).
#include <iostream>
#include <memory>

#include "commands.h"
#include "probe/probe.h"

namespace trainrt {

namespace {

/// Accepts what parse_duration accepts, so a bad --max-age is a usage error (exit 2).
const CLI::Validator kDuration(
    [](std::string& s) -> std::string {
      return parse_duration(s) ? "" : "'" + s + "' is not a duration (examples: 90s, 10m, 1h, 1h30m)";
    },
    "DURATION");

int report(const ProbeResult& r) {
  for (const auto& line : r.lines) (r.code == kOk ? std::cout : std::cerr) << line << '\n';
  return r.code;
}

}  // namespace

void add_probe(CLI::App& app, Run& run) {
  auto* probe = app.add_subcommand("probe", "exec probes for Kubernetes: exit 0 when the condition holds, 5 when not");
  probe->require_subcommand(1);

  struct Live {
    std::string heartbeat, max_age;
  };
  auto live = std::make_shared<Live>();
  auto* l = probe->add_subcommand("live", "liveness: the heartbeat file was touched within --max-age");
  l->add_option("--heartbeat", live->heartbeat, "file the workload touches while it makes progress")->required();
  l->add_option("--max-age", live->max_age, "oldest acceptable heartbeat: 90s, 10m, 1h, 1h30m")
      ->required()
      ->check(kDuration);
  l->callback([live, l, &run] {
    if (!run.stop_before_work(*l)) run.rc = report(check_heartbeat(live->heartbeat, *parse_duration(live->max_age)));
  });

  auto paths = std::make_shared<std::vector<std::string>>();
  auto* r = probe->add_subcommand("ready", "readiness: every --path exists and is readable (directories: listable)");
  r->add_option("--path", *paths, "a file or directory the workload needs (repeatable, or several after one --path)")
      ->required();
  r->callback([paths, r, &run] {
    if (!run.stop_before_work(*r)) run.rc = report(check_ready(*paths));
  });
}

}  // namespace trainrt
