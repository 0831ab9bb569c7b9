// trainrt: the runtime trainc's generated pods execute.
#include <exception>
#include <filesystem>

#include "commands.h"
#include "datagen/cuda_generator.h"
#include "preflight/gpu.h"
#include "train/xgb.h"
#include "report.h"

namespace {

/// `trainrt --version`: the version, then what this build can do with a GPU, one `name: yes|no` line
/// each, so a test or an image build can tell a CUDA build from one without it.
std::string version_text() {
  auto yes_no = [](bool b) { return b ? "yes" : "no"; };
  return fmt::format("trainrt {}\ncuda runtime + nccl (preflight): {}\ncuda kernel (datagen --device cuda): {}\n"
                     "xgboost: {}",
                     TRAINRT_VERSION, yes_no(trainrt::preflight::built_with_cuda()),
                     yes_no(trainrt::datagen::cuda_kernel_built()), trainrt::xgb::compiled_version());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"trainrt: synthetic data generation, distributed XGBoost training, NCCL preflight and probes\n"
               "Exit codes: 0 ok, 1 failed, 2 usage, 3 no usable GPU, 4 a rank never joined, 5 probe failed."};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  trainrt::Run run;
  app.add_flag("--check-args", run.check_args,
               "before the subcommand: parse and check its flags exactly as a real run would, print "
               "'trainrt SUB: arguments ok' and exit 0 without doing any work (no files, no network); "
               "bad flags exit 2 as usual");
  trainrt::add_datagen(app, run);
  trainrt::add_inspect(app, run);
  trainrt::add_train(app, run);
  trainrt::add_preflight(app, run);
  trainrt::add_probe(app, run);
  // Once the command line is parsed, before any subcommand runs: reports name the subcommand.
  app.parse_complete_callback([&app] {
    const CLI::App* command = &app;
    while (!command->get_subcommands().empty()) command = command->get_subcommands().front();
    if (command != &app) trainrt::report_as(trainrt::command_name(*command));
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return trainrt::kUsage;
  } catch (const std::filesystem::filesystem_error& e) {
    // Subcommands report their own failures; these handlers are the net under them.
    trainrt::report(fmt::format("a file operation failed{}{}: {}\nCheck that the path exists, is writable and its "
                                "storage is mounted, then run the same command again.",
                                e.path1().empty() ? "" : " on ", e.path1().string(), e.code().message()));
    return trainrt::kFailed;
  } catch (const std::exception& e) {
    trainrt::report(
        fmt::format("{}\nThis is unexpected: please report it with the command that was run.", e.what()));
    return trainrt::kFailed;
  }
  return run.rc;
}
