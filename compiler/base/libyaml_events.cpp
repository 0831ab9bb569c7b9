#include "base/libyaml_events.h"

#include <fmt/format.h>

namespace trainc {

YamlEvents::YamlEvents(std::string_view text) {
  yaml_parser_initialize(&parser_);
  yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
}

YamlEvents::~YamlEvents() {
  if (have_event_) yaml_event_delete(&event_);
  yaml_parser_delete(&parser_);
}

const yaml_event_t& YamlEvents::next() {
  if (have_event_) yaml_event_delete(&event_);
  have_event_ = false;
  if (!yaml_parser_parse(&parser_, &event_))
    throw YamlSyntaxError(fmt::format("{} at line {}, column {}", parser_.problem ? parser_.problem : "a syntax error",
                                      parser_.problem_mark.line + 1, parser_.problem_mark.column + 1));
  have_event_ = true;
  return event_;
}

}  // namespace trainc
