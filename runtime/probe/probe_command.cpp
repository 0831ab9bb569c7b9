#include "commands.h"

namespace trainrt {

void add_probe(CLI::App& app, int& rc) {
  app.add_subcommand("probe", "(not built yet)")->callback([&rc] { rc = kFailed; });
}

}  // namespace trainrt
