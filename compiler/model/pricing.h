#pragma once
// List prices (stdlib/prices.yaml) and Compute Engine quota metrics (stdlib/quotas.yaml), both
// embedded: what `trainc plan` and the runbook's capacity section read. Every figure has a source
// and a date in its file; nothing here is estimated.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trainc {

/// USD per hour for a machine type (the whole VM: vCPUs, memory, built-in GPUs or TPU chips) or for
/// one attached GPU, in one region. A missing figure is nullopt, never zero.
struct Price {
  std::optional<double> on_demand, spot, flex_start;
  std::string source, date, note;
};

/// Which regional quota metrics one kind of capacity counts against.
struct QuotaPair {
  std::string on_demand, spot;  ///< e.g. NVIDIA_T4_GPUS, PREEMPTIBLE_NVIDIA_T4_GPUS ("" = none known)
  std::string source;
};

class PriceBook {
 public:
  /// Parses the two files; throws std::runtime_error naming the row on malformed data.
  static PriceBook parse(const std::string& prices_yaml, const std::string& quotas_yaml);

  const Price* machine(const std::string& region, const std::string& type) const;
  const Price* gpu(const std::string& region, const std::string& accelerator) const;
  bool has_region(const std::string& region) const { return regions_.count(region) != 0; }
  std::vector<std::string> regions() const;
  const std::string& currency() const { return currency_; }

  /// The GPU quota metrics of an accelerator label; nullptr when the file has none.
  const QuotaPair* gpu_quota(const std::string& accelerator) const;
  /// The TPU chip quota metrics of a generation (v5e, ...); nullptr when the file has none.
  const QuotaPair* tpu_quota(const std::string& generation) const;
  /// The regional CPU metric a machine type's vCPUs count against ("" = none, or not known);
  /// Spot VMs count against PREEMPTIBLE_<metric>.
  std::string cpu_quota(const std::string& machine_type, bool preemptible = false) const;
  const std::string& addresses_quota() const { return addresses_; }
  /// The metric a machine type's boot disk (GKE's default type) counts against; "" when not known.
  std::string disks_quota(const std::string& machine_type) const;
  /// Whether flex-start VMs count against the preemptible (spot) metrics.
  bool flex_start_uses_spot_quota() const { return flex_spot_; }
  const std::string& quotas_source() const { return quotas_source_; }

 private:
  struct Region {
    std::map<std::string, Price> machines, gpus;
  };
  std::string currency_ = "USD";
  std::map<std::string, Region> regions_;
  std::map<std::string, QuotaPair> gpu_quotas_, tpu_quotas_;
  std::map<std::string, std::string> cpu_quotas_;  ///< machine-type prefix (n1, a3, ct5lp) -> metric
  std::string addresses_, disks_, quotas_source_;
  std::vector<std::string> disks_except_;  ///< machine-type prefixes whose boot disk type is not sourced
  bool flex_spot_ = false;
};

/// The embedded price book, parsed once.
const PriceBook& price_book();

}  // namespace trainc
