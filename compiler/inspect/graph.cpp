#include "inspect/graph.h"

#include <fmt/format.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "base/embedded.h"
#include "base/yaml_tree.h"
#include "base/output_sink.h"

extern "C" {
// Graphviz's plugin libraries, linked in (see compiler/meson.build) instead of found at run time.
extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
extern gvplugin_library_t gvplugin_core_LTX_library;
}

namespace trainc {
namespace {

/// A DOT double-quoted string: backslashes and quotes escaped, line breaks as DOT's "\n", and
/// control characters (which neither DOT nor the SVG's XML may hold) shown as '?'.
std::string q(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  }
  return out + "\"";
}

std::string lines(std::initializer_list<std::string> parts) {
  std::string out;
  for (const auto& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += '\n';
    out += p;
  }
  return out;
}

std::string range(int lo, int hi) { return lo == hi ? std::to_string(hi) : fmt::format("{}-{}", lo, hi); }

/// Points: the labels' size, and what Graphviz adds to a label's width inside a box (its default
/// margin of 0.11 inch a side) plus room for the decorations of box3d, component and note shapes.
constexpr double kFontSize = 10, kEdgeFontSize = 9, kBoxPadding = 16 + 6;

/// Advance widths, in ems, of the font a reader's viewer may draw the labels in (stdlib/fonts.yaml).
struct FontWidths {
  std::array<double, 0x7f - 0x20> ascii{};  ///< U+0020 to U+007E
  double other = 1;                          ///< any other character
};

const FontWidths& reader_font() {
  static const FontWidths widths = [] {
    const EmbeddedFile* f = find_embedded("stdlib/fonts.yaml");
    if (!f) throw std::logic_error("stdlib/fonts.yaml is not embedded");
    const YAML::Node font = read_yaml_tree(f->data)["font"];
    FontWidths w;
    if (font["ascii"].size() != w.ascii.size()) throw std::logic_error("stdlib/fonts.yaml: font.ascii has not 95 widths");
    for (size_t i = 0; i < w.ascii.size(); ++i) w.ascii[i] = font["ascii"][i].as<double>();
    w.other = font["other"].as<double>();
    return w;
  }();
  return widths;
}

/// Points `line` (UTF-8) takes in the reader's font at kFontSize, kerning (which mostly narrows) left out.
double text_width(std::string_view line) {
  const FontWidths& f = reader_font();
  double ems = 0;
  for (unsigned char c : line) {
    if (c >= 0x20 && c < 0x7f) ems += f.ascii[c - 0x20];
    else if ((c & 0xc0) != 0x80) ems += f.other;  // one per code point: continuation bytes add nothing
  }
  return ems * kFontSize;
}

/// Graphviz sizes a box for its own Helvetica metrics; a viewer without Helvetica, Arial or their
/// metric twin Liberation Sans draws the text in a wider font (Debian's default: DejaVu Sans). The
/// node's `width`, a minimum, makes room for the widest line in that font too.
std::string min_width(const std::string& label) {
  double widest = 0;
  for (size_t at = 0; at <= label.size();) {
    size_t end = label.find('\n', at);
    if (end == std::string::npos) end = label.size();
    widest = std::max(widest, text_width(std::string_view(label).substr(at, end - at)));
    at = end + 1;
  }
  return fmt::format("{:.2f}", std::ceil((widest + kBoxPadding) / 72 * 100) / 100);
}

struct Dot {
  std::string body;
  GraphShape shape;
  void node(const std::string& id, const std::string& label, const std::string& attrs) {
    body += fmt::format("  {} [label={}, width={}, {}];\n", q(id), q(label), min_width(label), attrs);
    ++shape.nodes;
  }
  void edge(const std::string& from, const std::string& to, const std::string& attrs = "") {
    body += fmt::format("  {} -> {}{};\n", q(from), q(to), attrs.empty() ? "" : " [" + attrs + "]");
    ++shape.edges;
  }
};

std::string pool_id(const std::string& n) { return "pool/" + n; }
std::string step_id(const std::string& n) { return "step/" + n; }
std::string store_id(const std::string& n) { return "store/" + n; }
std::string cluster_id(const std::string& n) { return "cluster/" + n; }
std::string service_id(const std::string& n) { return "service/" + n; }

std::string store_url(const Store& s) {
  std::string url = (s.kind == Store::Kind::gcs ? "gs://" : "s3://") + s.bucket;
  if (!s.prefix.empty()) url += "/" + s.prefix;
  return url;
}

constexpr const char* kReads = "color=\"#2e7d32\", label=\"reads\"";
constexpr const char* kWrites = "color=\"#c62828\", label=\"writes\"";
constexpr const char* kMounts = "color=\"#c62828\", dir=both, label=\"mounts\"";
constexpr const char* kRunsOn = "style=dashed, color=\"#757575\", arrowhead=empty";
constexpr const char* kRunsAs = "style=dotted, arrowhead=none, label=\"runs as\"";

}  // namespace

std::string graph_dot(const System& sys, GraphShape* shape) {
  Dot d;
  for (const auto& [name, p] : sys.pools) {
    std::string acc;
    if (p.accelerator) acc = fmt::format("{} x {}", p.accelerator->count, p.accelerator->type);
    if (p.tpu)
      acc = fmt::format("TPU {} {} ({} chips/host)", p.tpu->generation, p.tpu->topology, p.tpu->chips_per_host);
    const int slices = p.tpu ? p.tpu->slices : 1;
    const Pool::NodeRange r = p.node_range();
    std::string nodes = r.min != r.max ? fmt::format("{}-{} nodes", r.min, r.max)
                                       : fmt::format("{} node{}", r.max, r.max == 1 ? "" : "s");
    if (slices > 1) nodes += fmt::format(" x {} slices", slices);
    d.node(pool_id(name),
           lines({"pool " + name, p.machine, acc, nodes, p.provisioning == "standard" ? "" : p.provisioning}),
           // The box's top face takes 4pt of the default margin over the text: twice that, vertically.
           "shape=box3d, margin=\"0.11,0.11\", style=filled, fillcolor=\"#e3f2fd\"");
  }
  for (const auto& [name, s] : sys.stores)
    d.node(store_id(name), lines({"store " + name, store_url(s), s.read_only ? "read-only" : ""}),
           "shape=cylinder, style=filled, fillcolor=\"#fff8e1\"");
  for (const auto& [name, cl] : sys.clusters) {
    std::string groups;
    auto group = [&](const PodGroup& g) {
      groups += fmt::format("\n{}: {} pod{}{}", g.name, range(g.min, g.max), g.max == 1 ? "" : "s",
                            g.gpus ? fmt::format(" x {} GPU", g.gpus) : "");
    };
    group(cl.lead());
    for (const auto& g : cl.workers) group(g);
    d.node(cluster_id(name), fmt::format("{} cluster {}{}", cl.kind(), name, groups),
           "shape=component, style=filled, fillcolor=\"#ede7f6\"");
    std::set<std::string> pools;
    pools.insert(cl.lead().pool);
    for (const auto& g : cl.workers) pools.insert(g.pool);
    for (const auto& p : pools)
      if (!p.empty()) d.edge(cluster_id(name), pool_id(p), kRunsOn);
    for (const auto& m : cl.mounts) d.edge(cluster_id(name), store_id(m.store), m.read_only ? kReads : kMounts);
  }
  for (const auto& st : sys.steps) {
    std::string shape = fmt::format("{} pod{}", st.nodes * st.slices, st.nodes * st.slices == 1 ? "" : "s");
    if (st.gpus) shape += fmt::format(" x {} GPU", st.gpus);
    if (const Pool* p = sys.pool(st.pool); p && p->tpu) shape += fmt::format(" x {} TPU chips", p->tpu->chips_per_host);
    if (st.multislice()) shape += fmt::format("\n{} slices", st.slices);
    d.node(step_id(st.name), lines({"step " + st.name, st.kind(), shape}),
           "shape=box, style=\"rounded,filled\", fillcolor=\"#e8f5e9\"");
    for (const auto& n : st.needs) d.edge(step_id(n), step_id(st.name), "penwidth=2, label=\"then\"");
    if (!st.pool.empty()) d.edge(step_id(st.name), pool_id(st.pool), kRunsOn);
    if (!st.cluster.empty()) d.edge(step_id(st.name), cluster_id(st.cluster), kRunsOn);
    // One edge per store the step touches: what it reads, writes, or mounts read-write.
    std::map<std::string, int> use;  // store -> bits: 1 reads, 2 writes, 4 mounts read-write
    for (const auto& in : st.inputs) use[in.from.store] |= 1;
    if (st.outputs) use[st.outputs->to.store] |= 2;
    for (const auto& m : st.mounts) use[m.store] |= m.read_only ? 1 : 4;
    const auto reads = store_reads(st.run);
    for (const StoreLoc* loc : store_locs(st.run))
      use[loc->store] |= std::find(reads.begin(), reads.end(), loc) != reads.end() ? 1 : 2;
    for (const auto& [store, bits] : use) {
      if ((bits & 3) == 3)
        d.edge(step_id(st.name), store_id(store), "color=\"#c62828\", dir=both, label=\"reads, writes\"");
      else if (bits & 2)
        d.edge(step_id(st.name), store_id(store), kWrites);
      else if (bits & 4)
        d.edge(step_id(st.name), store_id(store), kMounts);
      else
        d.edge(store_id(store), step_id(st.name), kReads);
    }
  }
  for (const auto& [name, s] : sys.services) {
    d.node(service_id(name),
           lines({fmt::format("{} service {}", s.kind(), name),
                  fmt::format("{} replica{}{}", range(s.min, s.max), s.max == 1 ? "" : "s",
                              s.gpus ? fmt::format(" x {} GPU", s.gpus) : ""),
                  s.expose.gateway ? "through the Istio gateway" : ""}),
           "shape=box, style=\"rounded,filled\", fillcolor=\"#fce4ec\"");
    if (!s.pool.empty()) d.edge(service_id(name), pool_id(s.pool), kRunsOn);
    for (const StoreRef* r : s.store_refs()) d.edge(store_id(r->store), service_id(name), kReads);
  }
  // Identities: a Google service account each, with a role on each bucket its workloads use.
  if (sys.gcp) {
    for (const Identity* id : sys.identities()) {
      const std::string node = "identity/" + id->gsa;
      d.node(node, lines({"identity " + id->ksa, id->gsa + "@" + sys.gcp->project}),
             "shape=note, style=filled, fillcolor=\"#f5f5f5\"");
      std::map<std::string, std::string> roles;  // store -> its roles, one edge each
      for (const auto& g : id->grants) {
        std::string& r = roles[g.store];
        r += (r.empty() ? "" : "\n") + g.role.substr(g.role.rfind('.') + 1);
      }
      for (const auto& [store, r] : roles) d.edge(node, store_id(store), fmt::format("style=dotted, label={}", q(r)));
      if (!id->of.empty()) {
        d.edge(service_id(id->of), node, kRunsAs);
      } else {  // the system's: every step's and compute cluster's pods run as it (a RayJob in its cluster's)
        for (const auto& [name, _] : sys.clusters) d.edge(cluster_id(name), node, kRunsAs);
        for (const auto& st : sys.steps) d.edge(step_id(st.name), node, kRunsAs);
      }
    }
  }
  if (shape) *shape = d.shape;
  // nslimit and mclimit bound the layout's network-simplex and crossing-minimisation passes.
  return fmt::format(
      "// {}\n// {}\ndigraph {} {{\n  rankdir=LR;\n  graph [fontname=\"Helvetica\", fontsize={}, label={}, "
      "labelloc=t, nslimit=2, nslimit1=2, mclimit=0.5];\n"
      "  node [fontname=\"Helvetica\", fontsize={}];\n  edge [fontname=\"Helvetica\", fontsize={}];\n{}}}\n",
      kGeneratedNotice, "trainc graph of system " + sys.name, q(sys.name), kFontSize, q("system " + sys.name),
      kFontSize, kEdgeFontSize, d.body);
}

std::optional<std::string> render_svg(const std::string& dot, std::string& error) {
  static lt_symlist_t builtins[] = {{"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library},
                                    {"gvplugin_core_LTX_library", &gvplugin_core_LTX_library},
                                    {nullptr, nullptr}};
  // Graphviz keeps global state (its parser, error level and plugin tables): one graph at a time.
  static std::mutex one_at_a_time;
  std::lock_guard lock(one_at_a_time);
  agseterr(AGMAX);  // Graphviz prints nothing itself; a failure is reported below
  GVC_t* gvc = gvContextPlugins(builtins, 0);
  if (!gvc) {
    error = "Graphviz could not start";
    return std::nullopt;
  }
  std::optional<std::string> svg;
  Agraph_t* g = agmemread(dot.c_str());
  if (!g) {
    error = "Graphviz could not parse the graph";
  } else if (gvLayout(gvc, g, "dot") != 0) {
    error = "Graphviz could not lay out the graph";
  } else {
    char* data = nullptr;
    unsigned int len = 0;
    if (gvRenderData(gvc, g, "svg", &data, &len) == 0 && data) {
      svg = std::string(data, len);
      gvFreeRenderData(data);
      // Graphviz's version comment goes (the picture is the output, not who drew it); the notice goes
      // after the XML declaration, which must come first.
      if (size_t v = svg->find("<!-- Generated by graphviz"); v != std::string::npos) {
        const size_t end = svg->find("-->", v);
        if (end != std::string::npos) svg->erase(v, end + 4 - v);
      }
      const size_t at = svg->starts_with("<?xml") ? svg->find('\n') + 1 : 0;
      svg->insert(at, fmt::format("<!-- {} -->\n", kGeneratedNotice));
    } else {
      error = "Graphviz could not render SVG";
    }
    gvFreeLayout(gvc, g);
  }
  if (g) agclose(g);
  gvFreeContext(gvc);
  return svg;
}

}  // namespace trainc
