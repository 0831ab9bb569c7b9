#include "run/local_services.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/overloaded.h"
#include "model/triton_config.h"
#include "run/local_pods.h"
#include "run/process.h"

namespace fs = std::filesystem;

namespace trainc {
namespace {

/// The backends this Triton build has: its backends/ folder's subfolders.
std::vector<std::string> local_backends(const fs::path& server) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(server / "backends", ec))
    if (e.is_directory()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// The Python backend as Triton loads it: the backend library, its utilities and the stub built
/// for `version` (3.11) of the Python whose packages the models import, in one folder under `dir`.
bool python_backend(const fs::path& server, const std::string& version, const fs::path& dir, std::string& error) {
  const fs::path from = server / "backends/python", to = dir / "python";
  const fs::path stub = server / "python_backend_stubs" / version / "triton_python_backend_stub";
  if (!fs::exists(stub)) {
    error = fmt::format("this Triton has no Python backend stub for Python {} ({} is missing)", version, stub.string());
    return false;
  }
  std::error_code ec;
  fs::create_directories(to, ec);
  for (const fs::path& f : {from / "libtriton_python.so", from / "triton_python_backend_utils.py", stub})
    fs::copy_file(f, to / f.filename(), fs::copy_options::overwrite_existing, ec);
  if (ec) error = fmt::format("copying Triton's Python backend into {}: {}", to.string(), ec.message());
  return !ec;
}

/// One Triton service started here.
struct Started {
  std::string name;
  std::unique_ptr<Child> server;
  int http = 0;
  fs::path log;
  std::vector<std::string> models;
};

/// The lines of Triton's log that say what failed (its error lines), at most `n` of the last.
std::string log_errors(const fs::path& log, size_t n = 8) {
  std::ifstream in(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    // Not its note that no CUDA driver is here: Triton goes on without GPUs.
    if ((line.starts_with("E") || line.starts_with("error")) && line.find("CudaDriverHelper") == std::string::npos)
      lines.push_back(line);
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<long>(n));
  return lines.empty() ? "(no error line; see the log)" : fmt::format("{}", fmt::join(lines, "\n    "));
}

/// Fills the local repository as apply.sh fills the bucket: the spec's source folder copied over
/// what the steps wrote; the files the cluster downloads or copies from GCS are named when missing.
void fill_repository(const Service& s, const Triton& t, const fs::path& repo, const LocalRunOptions& opt) {
  fs::create_directories(repo);
  if (!t.source) return;
  const ContentSource& src = *t.source;
  if (!src.folder.empty()) {
    std::error_code ec;
    fs::copy(opt.spec_dir / src.folder, repo, fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
    fmt::print("  filled {} from {}{}\n", repo.string(), (opt.spec_dir / src.folder).string(),
               ec ? fmt::format(" (failed: {})", ec.message()) : "");
  }
  if (!src.gcs.empty())
    fmt::print("  service '{}': on the cluster the repository is copied from {}; not here\n", s.name, src.gcs);
  for (const FetchedFile& f : src.fetch)
    if (!fs::exists(repo / f.to))
      fmt::print("  service '{}': {} is downloaded on the cluster (from {}); not here, so a model that needs it will not "
                 "load\n", s.name, f.to, f.url);
}

/// What start_triton returns for a service that cannot be served here (having said why).
constexpr int kSkipped = -1;

/// Starts Triton for service `s`: 0 with `out` running, kSkipped when it cannot serve here (said
/// why), or an exit code.
int start_triton(const System& sys, const Service& s, const Triton& t, const LocalRunOptions& opt,
                 const fs::path& server, const std::string& python_version, const fs::path& site_packages,
                 std::unique_ptr<Started>& out) {
  const Store* store = sys.store(t.repository.store);
  if (!store || store->kind != Store::Kind::gcs) {
    fmt::print("skipping service '{}': its repository is in S3 store '{}', which Triton reads over S3; here only GCS "
               "stores are local folders\n", s.name, t.repository.store);
    return kSkipped;
  }
  std::string rel = t.repository.path;
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  const fs::path repo = fs::absolute(opt.workdir / "stores" / store->name / rel).lexically_normal();
  fill_repository(s, t, repo, opt);
  const auto have = local_backends(server);
  std::vector<std::string> models;
  for (const auto& m : t.models) {
    const auto config = read_triton_model_config(repo / m / "config.pbtxt");
    const std::string backend = config ? config->backend : "";
    if (backend.empty() || std::find(have.begin(), have.end(), backend) != have.end()) {
      models.push_back(m);
      continue;
    }
    fmt::print("  model '{}' of service '{}' runs on Triton's '{}' backend, which the local Triton (NVIDIA's "
               "nvidia-pytriton build) does not have ({} only): not served here\n",
               m, s.name, backend, fmt::join(have, ", "));
  }
  if (models.empty()) {
    fmt::print("skipping service '{}': none of its models can be served here\n", s.name);
    return kSkipped;
  }
  const fs::path dir = fs::absolute(opt.workdir / "services" / s.name);
  fs::create_directories(dir);
  std::string error;
  if (!python_backend(server, python_version, dir / "backends", error)) {
    fmt::print(stderr, "trainc: service '{}': {}\n", s.name, error);
    return 2;
  }
  auto started = std::make_unique<Started>();
  started->name = s.name;
  started->http = free_port();
  started->log = dir / "triton.log";
  started->models = models;
  std::vector<std::string> argv{(server / "bin/tritonserver").string(),
                                "--model-repository=" + repo.string(),
                                "--model-control-mode=explicit",
                                fmt::format("--http-port={}", started->http),
                                fmt::format("--grpc-port={}", free_port()),
                                fmt::format("--metrics-port={}", free_port()),
                                "--allow-gpu-metrics=false",
                                // Listeners on loopback only, as everything else a local run starts.
                                "--http-address=127.0.0.1", "--grpc-address=127.0.0.1", "--metrics-address=127.0.0.1",
                                "--backend-directory=" + (dir / "backends").string()};
  for (const auto& m : models) argv.push_back("--load-model=" + m);
  fmt::print("  $ {} (log: {})\n", fmt::join(argv, " "), started->log.string());
  std::fflush(stdout);
  // Its output goes to the log: Triton's model loading is verbose.
  std::vector<std::string> sh{"/bin/sh", "-c", "exec \"$0\" \"$@\" >>\"$TRITON_LOG\" 2>&1"};
  sh.insert(sh.end(), argv.begin(), argv.end());
  const std::map<std::string, std::string> env{
      {"TRITON_LOG", started->log.string()},
      {"LD_LIBRARY_PATH", (server.parent_path().parent_path() / "nvidia_pytriton.libs").string()},
      {"PYTHONPATH", site_packages.string()}};  // what a Python model imports: the project's packages
  started->server = std::make_unique<Child>(sh, error, env);
  if (!started->server->started()) {
    fmt::print(stderr, "trainc: service '{}': Triton did not start: {}\n", s.name, error);
    return 2;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::min(s.startup_seconds, 600));
  while (true) {
    if (auto rc = started->server->poll()) {
      fmt::print(stderr, "trainc: service '{}': Triton exited ({}) before it was ready:\n    {}\n", s.name, *rc,
                 log_errors(started->log));
      return 1 + (*rc == 0);
    }
    if (http_status(started->http, "/v2/health/ready") == 200) break;
    if (interrupted()) return 128 + interrupted();
    if (std::chrono::steady_clock::now() > deadline) {
      fmt::print(stderr, "trainc: service '{}': Triton was not ready within {}s (its startup probe's window):\n    {}\n",
                 s.name, std::min(s.startup_seconds, 600), log_errors(started->log));
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  for (const auto& m : models)
    if (http_status(started->http, fmt::format("/v2/models/{}/ready", m)) != 200) {
      fmt::print(stderr, "trainc: service '{}': model '{}' is not ready:\n    {}\n", s.name, m, log_errors(started->log));
      return 1;
    }
  fmt::print("service '{}' (triton): model(s) {} ready at http://127.0.0.1:{} (e.g. curl http://127.0.0.1:{}/v2/models/{})\n",
             s.name, fmt::join(models, ", "), started->http, started->http, models.front());
  out = std::move(started);
  return 0;
}

}  // namespace

fs::path triton_home() {
  if (const char* t = std::getenv("TRAINC_TRITON"); t && *t) return t;
  // tools/install-python.sh: <home>/triton beside <home>/current, the Python environment.
  return project_python().parent_path().parent_path().parent_path() / "triton";
}

int run_services(const System& sys, const LocalRunOptions& opt) {
  if (sys.services.empty()) return 0;
  const fs::path home = triton_home(), server = home / "pytriton/tritonserver";
  const fs::path python = project_python();
  std::vector<std::unique_ptr<Started>> running;  // stopped on return
  std::string version, site;  // the project's Python: its version (3.11) and its packages' folder
  for (const auto& entry : sys.services) {
    const std::string& name = entry.first;  // not a structured binding: lambdas below capture it
    const Service& s = entry.second;
    const Triton* t = match(
        s.server, [](const Triton& triton) { return &triton; },
        [&](const Vllm&) -> const Triton* {
          fmt::print("skipping service '{}': vLLM needs a GPU, which this machine does not have\n", name);
          return nullptr;
        });
    if (!t) continue;
    if (!fs::exists(server / "bin/tritonserver")) {
      fmt::print(stderr, "trainc: service '{}' runs Triton, which is not at {}: run tools/install-python.sh (it puts "
                         "NVIDIA's Triton build from the nvidia-pytriton wheel there), or set TRAINC_TRITON\n",
                 name, home.string());
      return 2;
    }
    if (version.empty()) {  // once, for the first Triton service: the Python its models import from
      const auto v = capture({python.string(), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"});
      const auto p = capture({python.string(), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"});
      if (!v || !p) {
        fmt::print(stderr, "trainc: service '{}': Triton's Python backend runs the models with the project's Python, "
                           "which is not at {}: run tools/install-python.sh\n", name, python.string());
        return 2;
      }
      version = v->substr(0, v->find_last_not_of('\n') + 1);
      site = p->substr(0, p->find_last_not_of('\n') + 1);
      fmt::print("services: Triton from {} (NVIDIA's build in the nvidia-pytriton wheel; Python backend), models' "
                 "Python {} with {}\n", home.string(), version, site);
    }
    fmt::print("[service] {} (triton{})\n", name,
               s.needs.empty() ? "" : fmt::format(", serving what {} wrote", fmt::join(s.needs, ", ")));
    std::unique_ptr<Started> started;
    const int rc = start_triton(sys, s, *t, opt, server, version, site, started);
    if (rc == kSkipped) continue;
    if (rc != 0) return rc;
    running.push_back(std::move(started));
  }
  if (running.empty()) return 0;
  if (!opt.serve) {
    for (auto& r : running) r->server->stop();
    fmt::print("services stopped: they were ready (--serve keeps them up until interrupted)\n");
    return 0;
  }
  fmt::print("serving until interrupted (Ctrl-C stops the services)\n");
  std::fflush(stdout);
  const int rc = running.front()->server->wait();
  if (interrupted()) {
    fmt::print("services stopped\n");
    return 0;
  }
  fmt::print(stderr, "trainc: service '{}': Triton exited ({}):\n    {}\n", running.front()->name, rc,
             log_errors(running.front()->log));
  return rc == 0 ? 1 : rc;
}

}  // namespace trainc
