// graph.svg: the picture of the system (`trainc graph`), which the runbook shows.
#include <fmt/format.h>

#include <stdexcept>

#include "emit/emitter.h"
#include "inspect/graph.h"

namespace trainc {
namespace {

class GraphEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "graph"; }

  void emit(const System&, const Planned& plan, OutputSink& out) const override {
    if (!plan.graph_shape.drawn_in_output()) return;  // the runbook says why and how to draw it
    std::string error;
    auto svg = render_svg(plan.graph, error);
    if (!svg) throw std::runtime_error(error);  // trainc's own DOT: a failure is a bug
    out.add("graph.svg", std::move(*svg));
  }
};

}  // namespace

std::unique_ptr<Emitter> new_graph_emitter() { return std::make_unique<GraphEmitter>(); }

}  // namespace trainc
