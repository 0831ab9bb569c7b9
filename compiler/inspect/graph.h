#pragma once
// `trainc graph`: the system as a picture. Pools (machine, accelerators), steps and their `needs`,
// compute clusters and services and the pools they run on, stores and who reads or writes them,
// identities and their bucket grants. DOT from trainc; SVG through Graphviz's own library (libgvc),
// with only its built-in dot layout and SVG renderer loaded, so that the same DOT gives the same
// bytes on every machine (no system fonts are consulted).
#include <optional>
#include <string>

#include "model/model.h"

namespace trainc {

/// The system as a Graphviz digraph.
std::string graph_dot(const System& sys);

/// Lays out `dot` and renders it as SVG, with trainc's generated-file notice after the XML
/// declaration; nullopt with `error` set when Graphviz rejects it.
std::optional<std::string> render_svg(const std::string& dot, std::string& error);

}  // namespace trainc
