#include "model/pricing.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <stdexcept>

#include "base/embedded.h"
#include "base/yaml_tree.h"

namespace trainc {
namespace {

std::string str_or(const YAML::Node& n, const char* key, const std::string& fallback = {}) {
  return n[key] && !n[key].IsNull() ? n[key].as<std::string>() : fallback;
}

std::optional<double> money(const YAML::Node& n, const char* key, const std::string& where) {
  if (!n[key] || n[key].IsNull()) return std::nullopt;
  double v = n[key].as<double>();
  if (!(v >= 0)) throw std::runtime_error(fmt::format("prices: {} has a negative {}", where, key));
  return v;
}

Price price_row(const YAML::Node& row, const std::string& where, const std::string& source, const std::string& date) {
  Price p;
  p.on_demand = money(row, "onDemand", where);
  p.spot = money(row, "spot", where);
  p.flex_start = money(row, "flexStart", where);
  p.source = str_or(row, "source", source);
  p.date = str_or(row, "date", date);
  p.note = str_or(row, "note");
  if (p.source.empty() || p.date.empty())
    throw std::runtime_error(fmt::format("prices: {} has no source or date (its own or its region's)", where));
  return p;
}

QuotaPair quota_pair(const YAML::Node& row, const std::string& source) {
  return {str_or(row, "onDemand"), str_or(row, "spot"), str_or(row, "source", source)};
}

}  // namespace

PriceBook PriceBook::parse(const std::string& prices_yaml, const std::string& quotas_yaml) {
  PriceBook b;
  const YAML::Node prices = read_yaml_tree(prices_yaml);
  b.currency_ = str_or(prices, "currency", "USD");
  for (const auto& r : prices["regions"]) {
    const std::string region = r.first.as<std::string>();
    const YAML::Node& body = r.second;
    const std::string source = str_or(body, "source"), date = str_or(body, "date");
    Region& out = b.regions_[region];
    for (const auto& m : body["machines"]) {
      const std::string type = str_or(m, "type");
      if (type.empty()) throw std::runtime_error(fmt::format("prices: a machine row in {} has no type", region));
      out.machines[type] = price_row(m, fmt::format("{} {}", region, type), source, date);
    }
    for (const auto& g : body["gpus"]) {
      const std::string acc = str_or(g, "accelerator");
      if (acc.empty()) throw std::runtime_error(fmt::format("prices: a gpu row in {} has no accelerator", region));
      out.gpus[acc] = price_row(g, fmt::format("{} {}", region, acc), source, date);
    }
  }
  const YAML::Node quotas = read_yaml_tree(quotas_yaml);
  b.quotas_source_ = str_or(quotas, "source");
  const std::string gpu_source = str_or(quotas["gpus"], "source", b.quotas_source_);
  for (const auto& g : quotas["gpus"]["rows"]) b.gpu_quotas_[str_or(g, "accelerator")] = quota_pair(g, gpu_source);
  const std::string tpu_source = str_or(quotas["tpus"], "source", b.quotas_source_);
  for (const auto& t : quotas["tpus"]["rows"]) b.tpu_quotas_[str_or(t, "generation")] = quota_pair(t, tpu_source);
  for (const auto& c : quotas["cpus"]["rows"]) b.cpu_quotas_[str_or(c, "prefix")] = str_or(c, "metric");
  b.addresses_ = str_or(quotas["addresses"], "metric");
  b.disks_ = str_or(quotas["disks"], "metric");
  if (quotas["disks"]["exceptPrefixes"])
    b.disks_except_ = quotas["disks"]["exceptPrefixes"].as<std::vector<std::string>>();
  b.flex_spot_ = quotas["flexStart"] && quotas["flexStart"]["usesSpotQuota"].as<bool>(false);
  return b;
}

const Price* PriceBook::machine(const std::string& region, const std::string& type) const {
  auto r = regions_.find(region);
  if (r == regions_.end()) return nullptr;
  auto it = r->second.machines.find(type);
  return it == r->second.machines.end() ? nullptr : &it->second;
}

const Price* PriceBook::gpu(const std::string& region, const std::string& accelerator) const {
  auto r = regions_.find(region);
  if (r == regions_.end()) return nullptr;
  auto it = r->second.gpus.find(accelerator);
  return it == r->second.gpus.end() ? nullptr : &it->second;
}

std::vector<std::string> PriceBook::regions() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : regions_) out.push_back(name);
  return out;
}

const QuotaPair* PriceBook::gpu_quota(const std::string& accelerator) const {
  auto it = gpu_quotas_.find(accelerator);
  return it == gpu_quotas_.end() ? nullptr : &it->second;
}

const QuotaPair* PriceBook::tpu_quota(const std::string& generation) const {
  auto it = tpu_quotas_.find(generation);
  return it == tpu_quotas_.end() ? nullptr : &it->second;
}

namespace {
std::string prefix_of(const std::string& machine_type) { return machine_type.substr(0, machine_type.find('-')); }
}  // namespace

std::string PriceBook::cpu_quota(const std::string& machine_type, bool preemptible) const {
  auto it = cpu_quotas_.find(prefix_of(machine_type));
  if (it == cpu_quotas_.end() || it->second.empty()) return "";
  return preemptible ? "PREEMPTIBLE_" + it->second : it->second;
}

std::string PriceBook::disks_quota(const std::string& machine_type) const {
  const std::string prefix = prefix_of(machine_type);
  for (const auto& p : disks_except_)
    if (p == prefix) return "";
  return disks_;
}

const PriceBook& price_book() {
  static const PriceBook b = [] {
    const auto* p = find_embedded("stdlib/prices.yaml");
    const auto* q = find_embedded("stdlib/quotas.yaml");
    if (!p || !q) throw std::logic_error("stdlib/prices.yaml or stdlib/quotas.yaml is not embedded");
    return PriceBook::parse(std::string(p->data), std::string(q->data));
  }();
  return b;
}

}  // namespace trainc
