#include "train/metrics_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "train/checkpoint.h"

namespace trainrt {

EvalResults parse_eval_line(std::string_view line) {
  EvalResults out;
  size_t at = 0;
  while (at <= line.size()) {
    size_t tab = line.find('\t', at);
    if (tab == std::string_view::npos) tab = line.size();
    const std::string field(line.substr(at, tab - at));
    const auto colon = field.rfind(':');
    if (colon != std::string::npos && colon > 0) {
      const std::string value = field.substr(colon + 1);
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (!value.empty() && end == value.c_str() + value.size()) out.emplace_back(field.substr(0, colon), v);
    }
    at = tab + 1;
  }
  return out;
}

std::string format_metrics_line(const RoundRecord& r) {
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const auto& [name, value] : r.metrics) {
    metrics[name] = std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
  }
  nlohmann::ordered_json j;
  j["round"] = r.round;
  j["elapsed_s"] = std::round(r.elapsed * 1000) / 1000;
  j["metrics"] = std::move(metrics);
  j["rows"] = r.rows;
  j["ranks"] = r.ranks;
  return j.dump() + "\n";
}

double truncate_metrics(const std::string& path, int rounds) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::string kept;
  double elapsed = 0;
  size_t at = 0;
  while (at < text.size()) {
    const auto nl = text.find('\n', at);
    if (nl == std::string::npos) break;  // a torn last line
    const std::string_view line(text.data() + at, nl - at);
    at = nl + 1;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("round") || !j["round"].is_number_integer()) continue;
    if (j["round"].get<int>() > rounds) break;
    kept.append(line).push_back('\n');
    if (j.contains("elapsed_s") && j["elapsed_s"].is_number()) elapsed = j["elapsed_s"].get<double>();
  }
  if (kept.size() != text.size()) write_file_atomically(path, kept);
  return elapsed;
}

MetricsLog::MetricsLog(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(fmt::format("{}: cannot open for appending: {}", path, std::strerror(errno)));
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::append(const RoundRecord& record) {
  const std::string line = format_metrics_line(record);
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace trainrt
