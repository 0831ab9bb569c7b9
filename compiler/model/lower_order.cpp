#include "model/lower_order.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace trainc {

std::vector<Step> dependency_order(std::vector<Step> steps, const Document& doc, Diagnostics& diags) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < steps.size(); ++i) index.emplace(steps[i].name, i);
  std::vector<bool> done(steps.size(), false);
  std::vector<Step> order;
  while (std::find(done.begin(), done.end(), false) != done.end()) {
    bool progressed = false;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (done[i]) continue;
      bool ready = std::all_of(steps[i].needs.begin(), steps[i].needs.end(), [&](const std::string& n) {
        auto it = index.find(n);
        return it == index.end() || it->second == i || done[it->second];
      });
      if (ready) {
        done[i] = true;
        order.push_back(steps[i]);
        progressed = true;
        break;
      }
    }
    if (progressed) continue;
    // Everything left waits on something: walk needs from the first waiting step to find the cycle.
    size_t start = std::find(done.begin(), done.end(), false) - done.begin();
    std::vector<size_t> trail{start};
    while (true) {
      const Step& cur = steps[trail.back()];
      size_t next = 0;
      for (const auto& n : cur.needs)
        if (auto it = index.find(n); it != index.end() && !done[it->second]) next = it->second;
      auto seen = std::find(trail.begin(), trail.end(), next);
      if (seen != trail.end()) {
        std::string path;
        for (auto it = seen; it != trail.end(); ++it) path += fmt::format("'{}' -> ", steps[*it].name);
        path += fmt::format("'{}'", steps[next].name);
        doc.error(diags, ptr_key(steps[*seen].ptr, "needs"),
                   fmt::format("steps form a cycle through needs: {}; remove one of these needs", path));
        for (auto it = seen; it != trail.end(); ++it) done[*it] = true;
        break;
      }
      trail.push_back(next);
    }
  }
  return order;
}

void leave_out(System& sys, std::set<std::string> out, const nlohmann::json& root) {
  const auto gone = [&](std::string_view kind, const std::string& name) {
    return !name.empty() && out.count(ptr_key(kind == "pools" ? "/cluster/pools" : "/" + std::string(kind), name));
  };
  std::map<std::string, std::string> step_ptr;  // every step's pointer by name, left-out ones too
  if (root.contains("pipeline") && root["pipeline"].is_array())
    for (size_t i = 0; i < root["pipeline"].size(); ++i) {
      const nlohmann::json& st = root["pipeline"][i];
      if (st.is_object() && st.contains("name") && st["name"].is_string())
        step_ptr.emplace(st["name"], ptr_index("/pipeline", i));
    }
  const auto mounts_gone = [&](const std::vector<Mount>& mounts) {
    return std::any_of(mounts.begin(), mounts.end(), [&](const Mount& m) { return gone("storage", m.store); });
  };
  for (bool changed = true; changed;) {
    changed = false;
    const auto mark = [&](const std::string& ptr) { changed |= out.insert(ptr).second; };
    for (const auto& [name, c] : sys.clusters) {
      bool bad = mounts_gone(c.mounts);
      for (const auto& w : c.workers) bad |= gone("pools", w.pool);
      if (const auto* r = c.as<Ray>()) bad |= gone("pools", r->head.pool);
      if (const auto* d = c.as<Dask>()) bad |= gone("pools", d->scheduler.pool);
      if (bad) mark(c.ptr);
    }
    for (const auto& [name, svc] : sys.services) {
      bool bad = gone("pools", svc.pool);
      for (const StoreRef* r : svc.store_refs()) bad |= gone("storage", r->store);
      if (bad) mark(svc.ptr);
    }
    for (const auto& st : sys.steps) {
      bool bad = gone("pools", st.pool) || gone("clusters", st.cluster) || mounts_gone(st.mounts);
      for (const auto& n : st.needs) bad |= step_ptr.count(n) && out.count(step_ptr[n]);
      for (const auto& in : st.inputs) bad |= gone("storage", in.from.store);
      if (st.outputs) bad |= gone("storage", st.outputs->to.store);
      for (const StoreLoc* loc : store_locs(st.run)) bad |= gone("storage", loc->store);
      if (bad) mark(st.ptr);
    }
  }
  std::erase_if(sys.pools, [&](const auto& kv) { return out.count(kv.second.ptr); });
  std::erase_if(sys.stores, [&](const auto& kv) { return out.count(kv.second.ptr); });
  std::erase_if(sys.clusters, [&](const auto& kv) { return out.count(kv.second.ptr); });
  std::erase_if(sys.services, [&](const auto& kv) { return out.count(kv.second.ptr); });
  std::erase_if(sys.steps, [&](const Step& st) { return out.count(st.ptr); });
  for (auto& st : sys.steps) std::erase_if(st.needs, [&](const std::string& n) { return !step_ptr.count(n); });
}

}  // namespace trainc
