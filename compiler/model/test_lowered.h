#pragma once
// For unit tests: a spec's text, loaded and lowered; the test fails with the diagnostics when it
// does not lower. One helper, so every test reads specs the way the compiler does.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "base/diagnostics.h"
#include "base/source.h"
#include "frontend/yaml_loader.h"
#include "model/lower.h"

namespace trainc::testing {

inline System lowered(const std::string& text, const std::string& file = "s.yaml") {
  Diagnostics diags;
  auto doc = load_yaml(std::make_shared<SourceFile>(file, text), diags);
  REQUIRE_MESSAGE(doc, diags.render_text());
  auto sys = lower(*doc, diags);
  REQUIRE_MESSAGE(sys, diags.render_text());
  return std::move(*sys);
}

}  // namespace trainc::testing
