#include "driver.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <sstream>
#include <thread>

#include "base/background.h"
#include "checks/checks.h"
#include "emit/emitter.h"
#include "emit/verify_objects.h"
#include "frontend/jsonnet_loader.h"
#include "frontend/limits.h"
#include "frontend/schema_check.h"
#include "frontend/yaml_loader.h"
#include "io/tree_writer.h"
#include "io/work_tree.h"
#include "model/catalog.h"
#include "model/lower.h"
#include "model/pricing.h"

namespace trainc {

SourcePtr read_source(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read spec '" + path + "': no such file or not readable";
    return nullptr;
  }
  // Read at most one byte past the limit, so that neither a huge file nor a device is read whole;
  // in pieces, so that a small spec does not cost a buffer of the limit's size.
  std::string text;
  char buf[1 << 16];
  while (text.size() <= limits::kSpecBytes) {
    const size_t want = std::min(sizeof buf, limits::kSpecBytes + 1 - text.size());
    in.read(buf, static_cast<std::streamsize>(want));
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (static_cast<size_t>(in.gcount()) < want) break;
  }
  if (text.size() > limits::kSpecBytes) {
    error = fmt::format("spec '{}' is larger than {} KiB; trainc reads specs up to that size", path,
                        limits::kSpecBytes >> 10);
    return nullptr;
  }
  if (in.bad()) {
    error = "cannot read spec '" + path + "'";
    return nullptr;
  }
  return std::make_shared<SourceFile>(path, std::move(text));
}

static bool is_jsonnet(const std::string& name) {
  return name.ends_with(".jsonnet") || name.ends_with(".libsonnet");
}

Origin make_origin(const std::string& spec, const std::string& out_dir) {
  const auto root = work_tree_root(spec);
  return Origin{relative_to(spec, root), out_dir.empty() ? "out" : relative_to(out_dir, root)};
}

WarmUp::WarmUp() {
  if (std::thread::hardware_concurrency() < 2) return;
  start_background([] {
    // A load that throws here leaves its static unset; the compile that needs it throws again, and
    // reports it.
    try {
      load_spec_schema();
      catalog();
      price_book();
    } catch (...) {
    }
  });
}

WarmUp::~WarmUp() { wait_background(); }

std::optional<Compiled> compile_source(const SourcePtr& source, Diagnostics& diags, const Origin& origin,
                                       const CheckOptions& checks) {
  diags.add_source(source);
  auto doc = is_jsonnet(source->name()) ? load_jsonnet(source, diags) : load_yaml(source, diags);
  if (!doc) return std::nullopt;
  // Every phase runs on what the one before it left valid, so independent mistakes are reported
  // together: schema errors prune the entities holding them, lowering errors leave out the
  // entities they were found in (and whatever refers to those) from the checks.
  const size_t before = diags.reported().size();
  if (check_schema(*doc, diags) == SchemaVerdict::invalid) return std::nullopt;
  auto system = lower_for_checks(*doc, diags);
  if (system) run_checks(*system, *doc, diags, checks);
  if (!system || diags.has_errors_since(before)) return std::nullopt;
  Compiled out{std::move(*system), {}};
  out.system.origin = origin;
  const k8s::Plan plan = k8s::plan(out.system);
  for (const auto& emitter : emitters()) emitter->emit(out.system, plan, out.files);
  // Verify before writing: an object the API server would reject is a bug (InvalidObjectError).
  check_objects(out.files);
  add_manifest(out.files, origin.spec);
  return out;
}

}  // namespace trainc
