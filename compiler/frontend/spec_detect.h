#pragma once
// Tells trainc specs from other YAML and Jsonnet files, for commands given every changed file of a
// commit (pre-commit hooks with --skip-non-specs).
#include <optional>
#include <string>

#include "base/source.h"

namespace trainc {

/// Why `file` is not a trainc spec ("no apiVersion: trainc/v1"), or nullopt when it is one or is
/// meant as one. A document counts as meant for trainc when its `apiVersion` starts with
/// "trainc/" or its `kind` is TrainingSystem, so a misspelled spec is still compiled (and its
/// errors reported); a YAML or Jsonnet file that does not parse or evaluate counts when its text
/// names trainc's apiVersion or kind (YAML) or trainc at all (Jsonnet).
std::optional<std::string> non_spec_reason(const SourcePtr& file);

}  // namespace trainc
