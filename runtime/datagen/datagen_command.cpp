#include "commands.h"

namespace trainrt {

void add_datagen(CLI::App& app, int& rc) {
  app.add_subcommand("datagen", "generate a synthetic classification or regression table (not built yet)")
      ->callback([&rc] { rc = kFailed; });
}

void add_inspect(CLI::App& app, int& rc) {
  app.add_subcommand("inspect", "print rows, columns and a checksum of a generated table (not built yet)")
      ->callback([&rc] { rc = kFailed; });
}

}  // namespace trainrt
