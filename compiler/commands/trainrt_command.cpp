#include "commands/trainrt_command.h"

#include <stdexcept>

#include <fmt/format.h>

#include "base/units.h"
#include "quoting/kubelet.h"
#include "quoting/shell.h"

namespace trainc::trainrt {
namespace {

std::string number(double v) { return fmt::format("{}", v); }

/// Flags of one command, added in the order trainrt documents them.
class Builder {
 public:
  explicit Builder(std::vector<std::string> words) { cmd_.words = std::move(words); }
  Builder& flag(std::string name, std::string value) {
    cmd_.flags.push_back({std::move(name), {lit(std::move(value))}});
    return *this;
  }
  Builder& flag(std::string name, std::vector<Part> value) {
    cmd_.flags.push_back({std::move(name), std::move(value)});
    return *this;
  }
  Builder& flag_switch(std::string name) {
    cmd_.flags.push_back({std::move(name), {}});
    return *this;
  }
  Command done() { return std::move(cmd_); }

 private:
  Command cmd_;
};

bool all_literal(const Flag& f) {
  for (const Part& p : f.value)
    if (p.env) return false;
  return true;
}

std::string literal_value(const Flag& f) {
  std::string out;
  for (const Part& p : f.value) out += p.text;
  return out;
}

/// Text inside double quotes: "$NAME", "$((NAME + 1))" and escaped literals.
std::string dq_value(const std::vector<Part>& parts) {
  std::string out;
  for (const Part& p : parts) {
    if (p.env && p.plus != 0) out += fmt::format("$(({} + {}))", p.text, p.plus);
    else if (p.env) out += "$" + p.text;
    else
      for (char c : p.text) {
        if (c == '"' || c == '\\' || c == '$' || c == '`') out += '\\';
        out += c;
      }
  }
  return out;
}

}  // namespace

Part lit(std::string text) { return {std::move(text), false, 0}; }
Part env(std::string_view name, int plus) { return {std::string(name), true, plus}; }

std::string pod_path_of(const StoreLoc& loc) { return loc.pod_path; }

Command datagen(const Datagen& d, const PathOf& where, int threads) {
  Builder b({"trainrt", "datagen"});
  b.flag("rows", std::to_string(d.rows)).flag("features", std::to_string(d.features)).flag("task", d.task);
  b.flag("informative", std::to_string(d.informative));
  if (d.task == "classification") {
    b.flag("redundant", std::to_string(d.redundant)).flag("repeated", std::to_string(d.repeated));
    b.flag("classes", std::to_string(d.classes)).flag("clusters-per-class", std::to_string(d.clusters_per_class));
    b.flag("class-sep", number(d.class_sep)).flag("flip-y", number(d.flip_y));
    if (!d.hypercube) b.flag_switch("no-hypercube");
    if (!d.weights.empty()) {
      std::string ws;
      for (double x : d.weights) ws += (ws.empty() ? "" : ",") + number(x);
      b.flag("weights", ws);
    }
  }
  b.flag("seed", std::to_string(d.seed)).flag("shards", std::to_string(d.shards)).flag("format", d.format);
  b.flag("out", where(d.to));
  if (threads > 0) b.flag("threads", std::to_string(threads));
  return b.done();
}

Flag shard_index(Part value) { return {"shard-index", {std::move(value)}}; }

Command train(const XGBoost& x, bool distributed, const PathOf& where, int threads) {
  Builder b({"trainrt", "train"});
  b.flag("data", where(x.from)).flag("model-dir", where(x.to)).flag("rounds", std::to_string(x.rounds));
  b.flag("checkpoint-every", std::to_string(x.checkpoint_every));
  for (const auto& [k, v] : x.params) b.flag("param", k + "=" + v);
  if (threads > 0) b.flag("threads", std::to_string(threads));
  if (distributed) {
    b.flag("rank", {env(kRankVar)}).flag("world-size", {env(kWorldVar)});
    b.flag("tracker", {env(kAddrVar), lit(":"), env(kPortVar)});
  }
  return b.done();
}

Flag tracker_serve() { return {"tracker-serve", {env(kPortVar)}}; }

Command preflight(int gpus, bool distributed) {
  Builder b({"trainrt", "preflight"});
  b.flag("expect-gpus", std::to_string(gpus));
  if (distributed) {
    b.flag("rank", {env(kRankVar)}).flag("world-size", {env(kWorldVar)});
    b.flag("coordinator", {env(kAddrVar), lit(":"), env(kPortVar, 1)});
  }
  return b.done();
}

Command probe_live(const std::string& heartbeat, int max_age_seconds) {
  return Builder({"trainrt", "probe", "live"})
      .flag("heartbeat", heartbeat)
      .flag("max-age", format_duration(max_age_seconds))
      .done();
}

Command probe_ready(const std::vector<std::string>& paths) {
  Builder b({"trainrt", "probe", "ready"});
  for (const auto& p : paths) b.flag("path", p);
  return b.done();
}

std::string shell_word(const Flag& f) {
  if (f.value.empty()) return sh_quote("--" + f.name);
  if (all_literal(f)) return sh_quote(fmt::format("--{}={}", f.name, literal_value(f)));
  return fmt::format("--{}=\"{}\"", f.name, dq_value(f.value));
}

std::vector<std::string> shell_words(const Command& c) {
  std::vector<std::string> out;
  for (const auto& w : c.words) out.push_back(sh_quote(w));
  for (const auto& f : c.flags) out.push_back(shell_word(f));
  return out;
}

std::vector<std::string> argv(const Command& c, const std::map<std::string, std::string>& env) {
  std::vector<std::string> out = c.words;
  for (const auto& f : c.flags) {
    if (f.value.empty()) {
      out.push_back("--" + f.name);
      continue;
    }
    std::string value;
    for (const Part& p : f.value) {
      if (!p.env) {
        value += p.text;
        continue;
      }
      auto it = env.find(p.text);
      if (it == env.end()) throw std::logic_error(fmt::format("trainrt flag --{} reads ${}, which is not set", f.name, p.text));
      value += p.plus == 0 ? it->second : std::to_string(std::stoll(it->second) + p.plus);
    }
    out.push_back(fmt::format("--{}={}", f.name, value));
  }
  return out;
}

std::vector<std::string> container_argv(const Command& c) {
  std::vector<std::string> out = k8s::literal(c.words);
  for (const auto& f : c.flags) {
    std::string word = "--" + f.name;
    if (!f.value.empty()) word += "=";
    for (const Part& p : f.value) {
      if (p.env && p.plus != 0) throw std::logic_error(fmt::format("--{}: Kubernetes cannot add to $({})", f.name, p.text));
      // A reference the kubelet expands; every other part arrives as written.
      word += p.env ? fmt::format("$({})", p.text) : k8s::literal(p.text);
    }
    out.push_back(word);
  }
  return out;
}

std::vector<std::string> exec_argv(const Command& c) {
  std::vector<std::string> out = c.words;
  for (const auto& f : c.flags) {
    if (!all_literal(f)) throw std::logic_error(fmt::format("exec probe flag --{} reads the environment", f.name));
    out.push_back("--" + f.name);
    if (!f.value.empty()) out.push_back(literal_value(f));
  }
  return out;
}

}  // namespace trainc::trainrt
