#pragma once
// `trainc graph`: the system as a picture. Pools (machine, accelerators), steps and their `needs`,
// compute clusters and services and the pools they run on, stores and who reads or writes them,
// identities and their bucket grants. DOT from trainc; SVG through Graphviz's own library (libgvc),
// with only its built-in dot layout and SVG renderer loaded, so that no system font is consulted
// and one trainc build draws the same bytes on every machine (another Graphviz release may not).
#include <optional>
#include <string>

#include "model/model.h"

namespace trainc {

/// How big the picture is: Graphviz's layout time grows much faster than its nodes and edges.
struct GraphShape {
  int nodes = 0, edges = 0;
  /// Whether compiled output includes graph.svg: above this size laying it out takes seconds to
  /// minutes, which no compile (or pre-commit hook) should wait for.
  bool drawn_in_output() const { return nodes <= 60 && edges <= 120; }
};

/// The system as a Graphviz digraph; `shape`, when given, gets its size.
std::string graph_dot(const System& sys, GraphShape* shape = nullptr);

/// Lays out `dot` and renders it as SVG, with trainc's generated-file notice after the XML
/// declaration; nullopt with `error` set when Graphviz rejects it.
std::optional<std::string> render_svg(const std::string& dot, std::string& error);

}  // namespace trainc
