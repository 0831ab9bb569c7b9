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

/// Reads the documents of `text`; with `one`, a second document is an error.
std::vector<YAML::Node> read_documents(std::string_view text, bool one, const YamlTreeLimits& limits) {
  YamlEvents events(text);
  std::vector<Frame> stack;
  std::vector<YAML::Node> docs;
  YAML::Node root;
  int documents = 0;
  size_t nodes = 0;
  auto fail = [&](const std::string& what, const yaml_mark_t& at) {
    throw std::runtime_error(fmt::format("{} at line {}, column {}", what, at.line + 1, at.column + 1));
  };
  auto count = [&](const yaml_event_t& e) {
    if (++nodes > limits.nodes) fail(fmt::format("more than {} values", limits.nodes), e.start_mark);
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
        if (one) docs.resize(1);
        return docs;
      case YAML_DOCUMENT_START_EVENT:
        if (++documents > 1 && one) fail("a second document", e.start_mark);
        root.reset();
        break;
      case YAML_DOCUMENT_END_EVENT:
        docs.push_back(root);
        break;
      case YAML_SCALAR_EVENT: {
        count(e);
        if (e.data.scalar.anchor) fail("an anchor", e.start_mark);
        if (e.data.scalar.length > limits.scalar_bytes)
          fail(fmt::format("a value of more than {} bytes", limits.scalar_bytes), e.start_mark);
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
        count(e);
        if (static_cast<int>(stack.size()) >= limits.depth)
          fail(fmt::format("nesting deeper than {}", limits.depth), e.start_mark);
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
      default:  // stream start
        break;
    }
  }
}

}  // namespace

YAML::Node read_yaml_tree(std::string_view text) {
  // The embedded data files are trainc's own: bounded by their size, not by these limits.
  YamlTreeLimits unbounded;
  unbounded.depth = 1 << 20;
  unbounded.nodes = static_cast<size_t>(-1);
  unbounded.scalar_bytes = static_cast<size_t>(-1);
  return read_documents(text, true, unbounded)[0];
}

std::vector<YAML::Node> read_yaml_documents(std::string_view text, const YamlTreeLimits& limits) {
  return read_documents(text, false, limits);
}

}  // namespace trainc
