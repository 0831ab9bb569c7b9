// trainrt: the runtime trainc's generated pods execute.
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"trainrt: synthetic data generation, distributed XGBoost training, NCCL preflight and probes\n"
               "Exit codes: 0 ok, 1 failed, 2 usage, 3 no usable GPU, 4 a rank never joined, 5 probe failed."};
  app.set_version_flag("--version", std::string("trainrt ") + TRAINRT_VERSION);
  app.require_subcommand(1);
  int rc = trainrt::kOk;
  trainrt::add_datagen(app, rc);
  trainrt::add_inspect(app, rc);
  trainrt::add_train(app, rc);
  trainrt::add_preflight(app, rc);
  trainrt::add_probe(app, rc);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return trainrt::kUsage;
  }
  return rc;
}
