#include "commands.h"

namespace trainrt {

void add_preflight(CLI::App& app, int& rc) {
  app.add_subcommand("preflight", "(not built yet)")->callback([&rc] { rc = kFailed; });
}

}  // namespace trainrt
