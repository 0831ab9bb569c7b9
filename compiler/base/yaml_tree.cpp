#include "base/yaml_tree.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "base/libyaml_events.h"

namespace trainc {
namespace {

struct Frame {
  YAML::Node node;
  YAML::Node key;
  bool have_key = false;
};

}  // namespace

YAML::Node read_yaml_tree(std::string_view text) {
  YamlEvents events(text);
  std::vector<Frame> stack;
  YAML::Node root;
  int documents = 0;
  auto fail = [&](const std::string& what, const yaml_mark_t& at) {
    throw std::runtime_error(fmt::format("{} at line {}, column {}", what, at.line + 1, at.column + 1));
  };
  auto add = [&](YAML::Node v) {
    // reset(), not =: assigning to a yaml-cpp node writes into the node it refers to.
    if (stack.empty()) {
      root.reset(v);
      return;
    }
    Frame& top = stack.back();
    if (top.node.IsSequence()) {
      top.node.push_back(v);
    } else if (!top.have_key) {
      top.key.reset(v);
      top.have_key = true;
    } else {
      top.node.force_insert(top.key, v);
      top.have_key = false;
    }
  };
  for (;;) {
    const yaml_event_t& e = events.next();
    switch (e.type) {
      case YAML_STREAM_END_EVENT:
        return root;
      case YAML_DOCUMENT_START_EVENT:
        if (++documents > 1) fail("a second document", e.start_mark);
        break;
      case YAML_SCALAR_EVENT: {
        if (e.data.scalar.anchor) fail("an anchor", e.start_mark);
        const std::string value(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
        const bool plain = e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !e.data.scalar.tag;
        if (plain && (value.empty() || value == "~" || value == "null" || value == "Null" || value == "NULL")) {
          add(YAML::Node(YAML::NodeType::Null));
        } else {
          YAML::Node n(value);
          n.SetTag(e.data.scalar.tag ? reinterpret_cast<const char*>(e.data.scalar.tag) : plain ? "?" : "!");
          add(n);
        }
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        const bool seq = e.type == YAML_SEQUENCE_START_EVENT;
        if (seq ? e.data.sequence_start.anchor != nullptr : e.data.mapping_start.anchor != nullptr)
          fail("an anchor", e.start_mark);
        stack.push_back({YAML::Node(seq ? YAML::NodeType::Sequence : YAML::NodeType::Map), {}, false});
        break;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        YAML::Node done = stack.back().node;
        stack.pop_back();
        add(done);
        break;
      }
      case YAML_ALIAS_EVENT:
        fail("an alias", e.start_mark);
        break;
      default:  // stream start, document end
        break;
    }
  }
}

}  // namespace trainc
