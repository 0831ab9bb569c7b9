#include "inspect/against.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "base/data_path.h"
#include "base/printable.h"
#include "base/yaml_tree.h"
#include "k8s/names.h"
#include "k8s/queue.h"
#include "k8s/services.h"
#include "model/catalog.h"

namespace trainc {
namespace {

using json = nlohmann::json;
using k8s::ObjectKey;

const std::set<std::string>& run_kinds() {
  static const std::set<std::string> kinds{"Job", "JobSet", "RayJob"};
  return kinds;
}

std::string step_of(const OutputObject& m, const std::set<std::string>& steps) { return object_step(m.obj, m.file, steps); }

}  // namespace

std::vector<OutputObject> output_objects(const OutputFiles& files, const std::string& where) {
  std::vector<OutputObject> out;
  for (const auto& [path, text] : files) {
    if (!path.starts_with("k8s/") || !path.ends_with(".yaml") || path == "k8s/kustomization.yaml") continue;
    std::vector<YAML::Node> docs;
    try {
      docs = read_yaml_documents(text);  // bounded, no aliases: OLD is untrusted (io/untrusted_folder.h)
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(printable(fmt::format("{}/{}: not an output's YAML: {}", where, path, e.what())));
    }
    // Each document's own text, as kubectl would read it from the file (a re-emitted node loses
    // which scalars were quoted: "True" would become a bool).
    std::vector<std::string> texts;
    if (docs.size() == 1) {
      texts.push_back(text);
    } else {
      std::string cur;
      for (size_t at = 0; at < text.size();) {
        size_t end = text.find('\n', at);
        end = end == std::string::npos ? text.size() : end + 1;
        const std::string_view line(text.data() + at, end - at);
        if (line == "---\n" || line == "---") {
          if (cur.find_first_not_of(" \n") != std::string::npos) texts.push_back(std::move(cur));
          cur.clear();
        } else {
          cur.append(line);
        }
        at = end;
      }
      if (cur.find_first_not_of(" \n") != std::string::npos) texts.push_back(std::move(cur));
    }
    for (size_t i = 0; i < docs.size(); ++i) {
      json obj = k8s::manifest_json(docs[i]);
      if (!obj.is_object() || !obj.contains("kind")) continue;
      out.push_back({k8s::object_key(obj), path, std::move(obj), i < texts.size() && texts.size() == docs.size() ? texts[i] : ""});
    }
  }
  return out;
}

bool is_run_kind(const std::string& kind) { return run_kinds().count(kind) > 0; }

std::string pointer_list(const std::vector<std::string>& paths, size_t most) {
  std::vector<std::string> shown(paths.begin(), paths.begin() + std::min(most, paths.size()));
  std::string out = fmt::format("{}", fmt::join(shown, ", "));
  if (paths.size() > most) out += fmt::format(" and {} more", paths.size() - most);
  return out;
}

/// What a roll of a service's Deployment costs it (k8s::roll_outage), "" for other objects.
std::string service_roll_outage(const k8s::Plan& plan, const ObjectKey& key) {
  if (key.kind != "Deployment") return "";
  for (const auto& w : plan.services)
    if (w.service && w.objects.end() != std::find_if(w.objects.begin(), w.objects.end(), [&](const k8s::Object& o) {
          return o.role == k8s::Role::kServer && o.name == key.name;
        }))
      return k8s::roll_outage(w);
  return "";
}


std::string object_step(const nlohmann::json& obj, const std::string& file, const std::set<std::string>& steps) {
  if (const auto it = obj.find("metadata"); it != obj.end())
    if (const auto l = it->find("labels"); l != it->end())
      if (const auto s = l->find(std::string(k8s::kStepLabel)); s != l->end() && s->is_string()) return s->get<std::string>();
  for (const char* suffix : {"-job.yaml", "-jobset.yaml", "-rayjob.yaml", "-configmap.yaml", "-service.yaml"}) {
    const std::string_view f(file);
    if (!f.ends_with(suffix)) continue;
    const std::string step(f.substr(4, f.size() - 4 - std::string_view(suffix).size()));
    if (steps.count(step)) return step;
  }
  return "";
}

namespace {

std::set<std::string> pipeline_names(const std::string& model_yaml) {
  std::set<std::string> out;
  if (model_yaml.empty()) return out;
  try {
    const auto docs = read_yaml_documents(model_yaml);
    if (docs.empty()) return out;
    for (const auto& s : docs[0]["pipeline"])
      if (s["name"]) out.insert(s["name"].as<std::string>());
  } catch (const std::exception&) {
  }
  return out;
}


/// What changed in a step's run object, in words: a renamed entry-script ConfigMap (named by its
/// content) is "its entry script"; other paths are listed.
std::string what_changed(const std::vector<std::string>& changed) {
  std::vector<std::string> rest;
  bool script = false;
  for (const auto& c : changed) {
    if (c.ends_with("/configMap/name"))
      script = true;
    else
      rest.push_back(c);
  }
  if (rest.empty()) return script ? "its entry script" : "nothing";
  return (script ? "its entry script, " : "") + pointer_list(rest);
}

const WorkloadPlan* step_workload(const ResourcePlan& plan, const std::string& step) {
  for (const auto& w : plan.workloads)
    if (w.kind.starts_with("step/") && w.name == step) return &w;
  return nullptr;
}


/// The Configuration in an output's Kueue ConfigMap (addons/), as JSON; null when the output has
/// none (a system without queues) or it does not parse.
json kueue_configuration_in(const OutputFiles& files) {
  const auto f = files.find(std::string(k8s::kKueueConfigFile));
  if (f == files.end()) return nullptr;
  try {
    for (const auto& d : read_yaml_documents(f->second)) {
      const json cm = k8s::manifest_json(d);
      const auto data = cm.find("data");
      if (data == cm.end() || !data->is_object()) continue;
      const auto text = data->find(catalog().kueue_config().key);
      if (text == data->end() || !text->is_string()) continue;
      const auto cfg = read_yaml_documents(text->get<std::string>());
      if (!cfg.empty()) return k8s::manifest_json(cfg[0]);
    }
  } catch (const std::runtime_error&) {
  }
  return nullptr;
}

/// Kueue's configuration is no object of k8s/: apply.sh writes it over the release's and restarts
/// Kueue's controller when the configuration it runs is another (emit_scripts_apply.cpp
/// configure_kueue). Named here as the two objects that change: the ConfigMap and the Deployment.
void kueue_configuration_change(const OutputFiles& old, const OutputFiles& neu, AgainstPlan& a) {
  const json now = kueue_configuration_in(neu);
  if (now.is_null()) return;
  const json before = kueue_configuration_in(old);
  if (before == now) return;
  const KueueConfig& k = catalog().kueue_config();
  const std::string& ns = catalog().kueue().ns;
  const std::string file(k8s::kKueueConfigFile);
  ObjectChange config;
  config.key = {"", "ConfigMap", ns, k.config_map};
  config.file = file;
  ObjectChange controller;
  controller.action = "roll";
  controller.key = {"apps", "Deployment", ns, k.deployment};
  controller.file = file;
  if (before.is_null()) {
    config.action = "create";
    config.detail = "Kueue's configuration for the cluster (the last output had none, or was written before it was "
                    "compiled): where Kueue runs already with another, it is replaced for every queue there";
    controller.detail = "Kueue's controller restarts where it runs already with another configuration (it reads it "
                        "only when it starts): admission pauses on the whole cluster until it is back, up to 300 s; "
                        "admitted workloads keep running";
  } else {
    config.action = "update";
    config.changed = k8s::changed_paths(before, now);
    config.detail = fmt::format("Kueue's configuration ({}): the whole cluster's, so every queue there gets it",
                                pointer_list(config.changed));
    controller.changed = config.changed;
    controller.detail = "apply.sh restarts Kueue's controller, which reads its configuration only when it starts: "
                        "admission pauses for every queue on the cluster until it is back (up to 300 s, its rollout "
                        "wait); admitted workloads keep running";
  }
  a.objects.push_back(std::move(config));
  a.objects.push_back(std::move(controller));
}


std::string hours(double h) { return h >= 100 ? fmt::format("{:.0f}", h) : fmt::format("{:.1f}", h); }

}  // namespace

void add_step_runs(const System& sys, const ResourcePlan& plan, std::map<std::string, std::string> reruns,
                   AgainstPlan& a) {
  // A new run of a step after a step it needs re-runs: named so because that one's run changed
  // (steps are in dependency order, so the steps it needs are decided first).
  for (const auto& s : sys.steps) {
    const auto r = reruns.find(s.name);
    if (r == reruns.end() || r->second != kNewRunWhy) continue;
    std::vector<std::string> upstream;
    for (const auto& need : s.needs)
      if (reruns.count(need)) upstream.push_back("'" + need + "'");
    if (!upstream.empty())
      r->second = fmt::format("it needs {}, which run{} again: its run has a new name", fmt::join(upstream, ", "),
                              upstream.size() == 1 ? "s" : "");
  }
  // The steps that run, in pipeline order, with what they hold.
  double hours_sum = 0, cost_sum = 0;
  bool bounded = true, priced = true;
  for (const auto& s : sys.steps) {
    const auto r = reruns.find(s.name);
    if (r == reruns.end()) continue;
    StepRun run{s.name, r->second, 0, 0, 0, std::nullopt, std::nullopt, std::nullopt, ""};
    if (s.checkpoints) {
      run.checkpoints = s.checkpoints->resume_previous ? "previous" : s.checkpoints->start_from.empty() ? "clean" : "file";
      run.resume_file = s.checkpoints->start_from;
      if (!s.checkpoints->resume_previous) run.history = s.history;
    }
    if (const WorkloadPlan* w = step_workload(plan, s.name)) {
      run.pods = w->max_pods;
      run.gpus = w->max_pods * w->gpus_per_pod;
      run.chips = w->max_pods * w->chips_per_pod;
      run.accelerator_hours = w->accelerator_hours;
      run.cost_bound = w->cost_bound;
      for (const auto& p : plan.pools)
        if (p.name == w->pool && p.node_price) {
          if (p.gpus_per_node > 0 && run.gpus > 0) run.price_per_hour = *p.node_price / p.gpus_per_node * run.gpus;
          if (p.chips_per_node > 0 && run.chips > 0) run.price_per_hour = *p.node_price / p.chips_per_node * run.chips;
        }
    }
    if (run.gpus + run.chips > 0) {
      if (run.accelerator_hours)
        hours_sum += *run.accelerator_hours;
      else
        bounded = false;
      if (run.cost_bound)
        cost_sum += *run.cost_bound;
      else
        priced = false;
    }
    a.runs.push_back(std::move(run));
  }
  if (bounded) a.accelerator_hours = hours_sum;
  if (bounded && priced) a.cost_bound = cost_sum;

  if (std::any_of(a.runs.begin(), a.runs.end(), [](const auto& r) { return !r.accelerator_hours && r.gpus + r.chips > 0; }))
    a.notes.push_back("a step that runs has no timeout, so its accelerator-hours have no bound; set `timeout` to bound them");
}

AgainstPlan plan_against(const System& sys, const ResourcePlan& plan, const OutputFiles& old, const OutputFiles& neu,
                         const std::string& old_folder) {
  const k8s::UpdateRules& rules = k8s::update_rules();
  AgainstPlan a;
  a.old_folder = old_folder;
  const std::vector<OutputObject> olds = output_objects(old, old_folder), news = output_objects(neu, "the new output");
  std::set<std::string> new_steps, old_steps;
  for (const auto& s : sys.steps) new_steps.insert(s.name);
  const auto old_model = old.find("model.yaml");
  old_steps = pipeline_names(old_model == old.end() ? "" : old_model->second);
  std::set<std::string> all_steps = new_steps;
  all_steps.insert(old_steps.begin(), old_steps.end());

  std::map<ObjectKey, const OutputObject*> old_by_key;
  std::map<std::string, std::vector<const OutputObject*>> old_runs;  // step -> its run objects in OLD
  for (const auto& m : olds) {
    old_by_key[m.key] = &m;
    const std::string step = step_of(m, all_steps);
    if (!step.empty() && run_kinds().count(m.key.kind)) old_runs[step].push_back(&m);
    if (old_model == old.end()) old_steps.insert(step);  // no model.yaml: the steps its objects name
  }
  old_steps.erase("");

  std::map<std::string, std::string> reruns;  // step -> why
  std::set<ObjectKey> seen;
  const k8s::Plan services = k8s::plan(sys);  // the rollouts its Deployments make
  for (const auto& m : news) {
    ObjectChange c;
    c.key = m.key;
    c.file = m.file;
    c.step = step_of(m, all_steps);
    seen.insert(m.key);
    const bool run = !c.step.empty() && run_kinds().count(m.key.kind);
    const auto it = old_by_key.find(m.key);
    if (it == old_by_key.end()) {
      c.action = "create";
      if (run && old_steps.count(c.step)) {
        // Same step, another name: a new run (the old one stays as history until pruned).
        c.action = "rerun";
        std::vector<std::string> before;
        for (const auto* o : old_runs[c.step]) before.push_back(o->key.name);
        c.detail = before.empty() ? "a new run of the step"
                                  : fmt::format("a new run of the step (the last was {})", fmt::join(before, ", "));
        reruns.emplace(c.step, std::string(kNewRunWhy));
      } else if (run) {
        c.detail = "a new step: its first run";
        reruns.emplace(c.step, "a new step");
      }
    } else {
      const k8s::UpdateVerdict v = rules.judge(it->second->obj, m.obj);
      c.action = k8s::action_name(v.action);
      c.changed = v.changed;
      c.refused = v.refused;
      if (v.action == k8s::UpdateVerdict::Action::replace) {
        std::vector<std::string> fields;
        for (const auto& r : v.refused) fields.push_back(r.path);
        c.detail = fmt::format("{} cannot change in place: delete it, then apply; {}", fmt::join(fields, ", "),
                               v.lost.empty() ? "what it holds is lost" : v.lost);
        if (run) reruns.emplace(c.step, fmt::format("its {} is replaced ({} changed)", m.key.kind, what_changed(v.changed)));
      } else if (v.action == k8s::UpdateVerdict::Action::rerun) {
        c.detail = v.why;
        reruns.emplace(c.step, fmt::format("its {} changed ({} changed)", m.key.kind, what_changed(v.changed)));
      } else if (v.action == k8s::UpdateVerdict::Action::roll) {
        c.detail = fmt::format("its pods are restarted with the new template ({} changed)", pointer_list(v.changed));
        const std::string served = ptr_key("/spec/template/metadata/annotations", k8s::kServedRunsAnnotation);
        if (std::find(v.changed.begin(), v.changed.end(), served) != v.changed.end())
          c.detail += "; it serves a new run of the steps it needs, and loads what that run writes once it is done";
        if (const std::string outage = service_roll_outage(services, m.key); !outage.empty()) c.detail += "; " + outage;
      } else if (v.action == k8s::UpdateVerdict::Action::update) {
        c.detail = v.why.empty() ? fmt::format("changed in place: {}", pointer_list(v.changed)) : v.why;
      }
    }
    a.objects.push_back(std::move(c));
  }
  std::map<std::string, int> history;  // step -> its runs apply.sh keeps, the current one included
  for (const auto& s : sys.steps) history[s.name] = s.history;
  for (const auto& m : olds) {
    if (seen.count(m.key)) continue;
    ObjectChange c;
    c.action = "remove";
    c.key = m.key;
    c.file = m.file;
    c.step = step_of(m, all_steps);
    const bool kept = !c.step.empty() && new_steps.count(c.step) && history[c.step] > 1;
    if (kept) c.action = "keep";
    if (kept && run_kinds().count(m.key.kind))
      c.detail = fmt::format("the step's previous run: kept as history once finished (history: {}, the current run "
                             "included), deleted if still going (the new run replaces it); an older run beyond the "
                             "history is pruned (the last output does not hold it: `trainc diff --live` names it)",
                             history[c.step]);
    else if (kept)
      c.detail = fmt::format("of step '{}' as it was: kept with its run, and pruned with it", c.step);
    else if (!c.step.empty() && new_steps.count(c.step))
      c.detail = fmt::format("of step '{}' as it was: pruned, the step keeps only its current run (history: 1)", c.step);
    else if (!c.step.empty() && !new_steps.count(c.step))
      c.detail = "its step is no longer in the spec: pruned";
    else
      c.detail = "no longer in the output: pruned (kubectl apply -k alone leaves it behind)";
    a.objects.push_back(std::move(c));
  }
  kueue_configuration_change(old, neu, a);
  for (const auto& c : a.objects) ++a.counts[c.action];
  add_step_runs(sys, plan, reruns, a);

  const auto new_model = neu.find("model.yaml");
  if (old_model == old.end())
    a.notes.push_back(fmt::format("{} has no model.yaml: pools are not compared", old_folder));
  else if (new_model != neu.end())
    a.pools = compare_pools(old_model->second, new_model->second, a.notes);
  return a;
}

std::string render_against_text(const AgainstPlan& a) {
  std::string out = fmt::format("Changes against {}\n\n", a.subject.empty() ? a.old_folder + " (the output applied last)" : a.subject);
  if (!a.runs.empty()) {
    out += "Steps that run\n";
    for (const auto& r : a.runs) {
      std::string held = r.gpus ? fmt::format("{} GPUs", r.gpus) : r.chips ? fmt::format("{} TPU chips", r.chips) : "no accelerators";
      if (r.gpus + r.chips > 0)
        held += r.accelerator_hours ? fmt::format(", <= {} {}-hours", hours(*r.accelerator_hours), r.gpus ? "GPU" : "chip")
                                    : ", no timeout: hours unbounded";
      if (r.cost_bound) held += fmt::format(", <= ${:.2f}", *r.cost_bound);
      if (r.price_per_hour) held += fmt::format(", ${:.2f} per hour while it runs", *r.price_per_hour);
      out += fmt::format("  {}: {} ({} pod{}, {})\n", r.step, r.why, r.pods, r.pods == 1 ? "" : "s", held);
      const std::string kept =
          fmt::format("the checkpoints of its earlier runs stay in the store (the newest {} runs', history), not resumed",
                      r.history);
      if (r.checkpoints == "clean")
        out += fmt::format("    starts clean: {} (checkpoints.resumeFrom: previous would continue from them)\n", kept);
      else if (r.checkpoints == "file")
        out += fmt::format("    starts from {} (checkpoints.resumeFrom): {}\n", r.resume_file, kept);
      else if (r.checkpoints == "previous")
        out += "    continues from the newest checkpoint in the store, whichever run wrote it (checkpoints.resumeFrom: "
               "previous)\n";
    }
    if (a.accelerator_hours && *a.accelerator_hours > 0)
      out += fmt::format("  in all: <= {} accelerator-hours{}\n", hours(*a.accelerator_hours),
                         a.cost_bound ? fmt::format(", <= ${:.2f}", *a.cost_bound) : "");
    out += "\n";
  } else {
    out += "Steps that run: none\n\n";
  }
  out += "Objects\n";
  int unchanged = 0;
  for (const auto& c : a.objects) {
    if (c.action == "unchanged") {
      ++unchanged;
      continue;
    }
    out += fmt::format("  {:<9} {} ({})\n", c.action, c.key.describe(), c.file);
    if (!c.detail.empty()) out += fmt::format("            {}\n", c.detail);
    for (const auto& r : c.refused)
      out += fmt::format("            - {} is immutable ({} changed) [{}]\n", r.path, r.changed, r.source);
  }
  out += fmt::format("  {} unchanged\n\n", unchanged);
  if (!a.pools.empty()) {
    out += "Pools\n";
    for (const auto& p : a.pools) {
      out += fmt::format("  {:<9} {}", p.action, p.pool);
      if (!p.fields.empty()) out += fmt::format(": {}", fmt::join(p.fields, "; "));
      out += "\n";
      if (!p.detail.empty()) out += fmt::format("            {}\n", p.detail);
    }
    out += "\n";
  }
  if (!a.drift.empty()) {
    out += "Drift (changed on the cluster since the last apply; applying puts back what the output says)\n";
    for (const auto& d : a.drift) {
      out += fmt::format("  drift     {} ({})\n", d.key.describe(), d.file);
      for (const auto& f : d.fields) out += fmt::format("            - {}\n", f);
      if (!d.detail.empty()) out += fmt::format("            {}\n", d.detail);
    }
    out += "\n";
  }
  std::vector<std::string> summary;
  for (const char* act : {"refused", "rerun", "replace", "roll", "update", "create", "remove", "keep", "unchanged"})
    if (const auto it = a.counts.find(act); it != a.counts.end()) summary.push_back(fmt::format("{} {}", it->second, act));
  out += fmt::format("Summary: {} step(s) run; objects: {}{}\n", a.runs.size(), fmt::join(summary, ", "),
                     a.drift.empty() ? "" : fmt::format("; {} drifted", a.drift.size()));
  for (const auto& n : a.notes) out += fmt::format("note: {}\n", n);
  return out;
}

nlohmann::ordered_json against_json(const AgainstPlan& a) {
  using oj = nlohmann::ordered_json;
  oj out;
  out["old"] = a.old_folder;
  oj objects = oj::array();
  for (const auto& c : a.objects) {
    oj refused = oj::array();
    for (const auto& r : c.refused) refused.push_back({{"path", r.path}, {"changed", r.changed}, {"source", r.source}});
    objects.push_back({{"action", c.action},
                       {"group", c.key.group},
                       {"kind", c.key.kind},
                       {"namespace", c.key.ns.empty() ? oj() : oj(c.key.ns)},
                       {"name", c.key.name},
                       {"file", c.file},
                       {"step", c.step.empty() ? oj() : oj(c.step)},
                       {"changed", c.changed},
                       {"refused", refused},
                       {"detail", c.detail}});
  }
  out["objects"] = objects;
  oj pools = oj::array();
  for (const auto& p : a.pools)
    pools.push_back({{"pool", p.pool}, {"action", p.action}, {"fields", p.fields}, {"detail", p.detail}});
  out["pools"] = pools;
  oj runs = oj::array();
  for (const auto& r : a.runs) {
    runs.push_back({{"step", r.step},
                    {"why", r.why},
                    {"pods", r.pods},
                    {"gpus", r.gpus},
                    {"tpuChips", r.chips},
                    {"acceleratorHours", r.accelerator_hours ? oj(*r.accelerator_hours) : oj()},
                    {"costBound", r.cost_bound ? oj(*r.cost_bound) : oj()},
                    {"pricePerHour", r.price_per_hour ? oj(*r.price_per_hour) : oj()},
                    {"checkpoints", r.checkpoints.empty() ? oj() : oj(r.checkpoints)}});
    if (!r.resume_file.empty()) runs.back()["resumeFile"] = r.resume_file;
  }
  out["runs"] = runs;
  oj counts = oj::object();
  for (const char* act : {"create", "unchanged", "update", "roll", "replace", "rerun", "remove", "keep"}) {
    const auto it = a.counts.find(act);
    counts[act] = it == a.counts.end() ? 0 : it->second;
  }
  out["counts"] = counts;
  out["acceleratorHours"] = a.accelerator_hours ? oj(*a.accelerator_hours) : oj();
  out["costBound"] = a.cost_bound ? oj(*a.cost_bound) : oj();
  out["notes"] = a.notes;
  return out;
}

}  // namespace trainc
