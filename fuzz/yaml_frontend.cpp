// libFuzzer harness: the YAML front end (yaml_loader, the limits it enforces while converting, and
// schema_check), then the diagnostics rendered the three ways the CLI prints them.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/diagnostics.h"
#include "frontend/schema_check.h"
#include "frontend/yaml_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = std::make_shared<trainc::SourceFile>("spec.yaml", std::string(reinterpret_cast<const char*>(data), size));
  trainc::Diagnostics diags;
  diags.add_source(file);
  if (auto doc = trainc::load_yaml(file, diags)) trainc::check_schema(*doc, diags);
  (void)diags.render_text();
  (void)diags.render_json();
  (void)diags.render_github();
  return 0;
}
