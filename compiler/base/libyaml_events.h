#pragma once
// libyaml's event parser over text in memory, for the readers built on it: base/yaml_tree.h (the
// embedded data files) and emit/verify_objects.h (emitted manifests read back).
#include <yaml.h>

#include <stdexcept>
#include <string_view>

namespace trainc {

/// Text that does not parse as YAML.
struct YamlSyntaxError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The parse events of `text`, one at a time; `text` must outlive the reader.
class YamlEvents {
 public:
  explicit YamlEvents(std::string_view text);
  ~YamlEvents();
  YamlEvents(const YamlEvents&) = delete;
  YamlEvents& operator=(const YamlEvents&) = delete;

  /// The next event, valid until the next call. Throws YamlSyntaxError ("PROBLEM at line L,
  /// column C"); after YAML_STREAM_END_EVENT there is nothing more to ask for.
  const yaml_event_t& next();

 private:
  yaml_parser_t parser_;
  yaml_event_t event_;
  bool have_event_ = false;
};

}  // namespace trainc
