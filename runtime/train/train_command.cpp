#include "commands.h"

namespace trainrt {

void add_train(CLI::App& app, int& rc) {
  app.add_subcommand("train", "(not built yet)")->callback([&rc] { rc = kFailed; });
}

}  // namespace trainrt
