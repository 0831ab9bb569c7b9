#include "model/images.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "base/embedded.h"
#include "base/yaml_tree.h"
#include "model/model.h"

namespace trainc {
namespace {

std::string str(const YAML::Node& n, const char* key) {
  return n[key] && n[key].IsScalar() ? n[key].as<std::string>() : std::string();
}

std::vector<int> ints(const YAML::Node& n, const char* key) {
  std::vector<int> out;
  if (n[key]) out = n[key].as<std::vector<int>>();
  return out;
}

std::set<std::string> words(const YAML::Node& n, const char* key) {
  std::set<std::string> out;
  if (n[key])
    for (const auto& w : n[key]) out.insert(w.as<std::string>());
  return out;
}

std::vector<long> driver_parts(const std::string& v) {
  std::vector<long> parts;
  size_t i = 0;
  while (i < v.size()) {
    size_t j = v.find('.', i);
    if (j == std::string::npos) j = v.size();
    parts.push_back(std::stol(v.substr(i, j - i)));
    i = j + 1;
  }
  return parts;
}

}  // namespace

int compare_driver(const std::string& a, const std::string& b) {
  const auto pa = driver_parts(a), pb = driver_parts(b);
  for (size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
    const long x = i < pa.size() ? pa[i] : 0, y = i < pb.size() ? pb[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::optional<bool> ImageFacts::runs_on(int cc) const {
  if (archs.empty()) return std::nullopt;
  for (int a : archs)
    if (a == cc) return true;
  // The driver compiles PTX for any newer architecture; a native sm_XY cubin runs on sm_XZ with
  // Z >= Y of the same major (binary compatibility within a major version, CUDA C Programming
  // Guide, 'Binary Compatibility').
  if (ptx && *ptx <= cc) return true;
  for (int a : archs)
    if (a / 10 == cc / 10 && a <= cc) return true;
  return false;
}

std::string ImageFacts::arch_list() const {
  std::string out;
  for (int a : archs) out += fmt::format("{}sm_{}", out.empty() ? "" : ", ", a);
  if (ptx) out += fmt::format(" (+PTX sm_{})", *ptx);
  return out;
}

std::string image_reference_error(const std::string& reference) {
  constexpr size_t kMaxDigest = 256 + 1 + 128;
  if (std::string why = image_reference_bounds_error(reference); !why.empty()) return why;
  for (unsigned char c : reference)
    if (c <= ' ' || c >= 0x7f) return "an image reference has no spaces, control or non-ASCII characters";
  std::string name = reference, tag, digest;
  if (const auto at = name.find('@'); at != std::string::npos) {
    digest = name.substr(at + 1);
    name.resize(at);
    const auto colon = digest.find(':');
    if (digest.size() > kMaxDigest || colon == std::string::npos || colon == 0 || colon + 1 == digest.size() ||
        digest.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789+._-:") != std::string::npos ||
        digest.substr(colon + 1).find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      return "its digest is not ALGORITHM:HEX (such as sha256: and 64 hexadecimal digits)";
    if (digest.starts_with("sha256:") && digest.size() != 7 + 64) return "a sha256 digest has 64 hexadecimal digits";
  }
  const auto slash = name.rfind('/');
  if (const auto colon = name.rfind(':'); colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    tag = name.substr(colon + 1);
    name.resize(colon);
    if (tag.empty()) return "its tag after ':' is empty";
    if (tag.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != std::string::npos ||
        tag.front() == '.' || tag.front() == '-')
      return "its tag has characters other than letters, digits, '_', '.' and '-' (and starts with neither '.' nor '-')";
  }
  if (name.empty()) return "it names no repository";
  size_t begin = 0;
  for (bool first = true;; first = false) {
    const auto end = name.find('/', begin);
    const std::string part = name.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (part.empty()) return "its name has an empty component between '/'";
    // The first of several components may be a registry: a host (any case, dots) with a :port.
    const bool host = first && end != std::string::npos &&
                      (part.find_first_of(".:") != std::string::npos || part == "localhost" ||
                       part.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos);
    const char* allowed = host ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-:[]"
                               : "abcdefghijklmnopqrstuvwxyz0123456789._-";
    if (part.find_first_not_of(allowed) != std::string::npos)
      return fmt::format("its name's component '{}' has characters a {} does not", part,
                         host ? "registry host" : "repository path (lower-case letters, digits, '.', '_', '-')");
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return "";
}

std::string image_reference_bounds_error(const std::string& reference) {
  if (reference.empty()) return "an image reference is empty";
  std::string tag;
  const std::string name = image_repository(reference, &tag);
  if (tag.size() > 128)
    return fmt::format("its tag is {} characters; a tag has at most 128 (the OCI distribution spec)", tag.size());
  const auto at = reference.find('@');
  if ((at == std::string::npos ? reference.size() : at) - (tag.empty() ? 0 : tag.size() + 1) > 255)
    return "its name is over 255 characters; a name has at most 255";
  return "";
}

std::string image_repository(const std::string& reference, std::string* tag) {
  std::string ref = reference;
  if (auto at = ref.find('@'); at != std::string::npos) ref.resize(at);
  std::string t;
  const auto slash = ref.rfind('/');
  const auto colon = ref.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    t = ref.substr(colon + 1);
    ref.resize(colon);
  }
  for (std::string_view prefix : {"docker.io/library/", "index.docker.io/library/", "docker.io/", "index.docker.io/"})
    if (ref.starts_with(prefix)) {
      ref = ref.substr(prefix.size());
      break;
    }
  if (tag) *tag = t;
  return ref;
}

ImageBook ImageBook::parse(const std::string& yaml_text) {
  ImageBook b;
  const YAML::Node root = read_yaml_tree(yaml_text);
  for (const auto& kv : root["cudaDrivers"]) {
    const std::string key = kv.first.as<std::string>();
    if (key != "source") b.cuda_drivers_[key] = kv.second.as<std::string>();
  }
  for (const auto& kv : root["computeCapabilities"]) {
    const std::string key = kv.first.as<std::string>();
    if (key != "source") b.capabilities_[key] = kv.second.as<int>();
  }
  for (const auto& kv : root["injected"]) {
    const YAML::Node& t = kv.second;
    InjectedTool tool{kv.first.as<std::string>(), str(t, "image"), str(t, "copy"), str(t, "bin"), str(t, "cpu"),
                      str(t, "memory"), str(t, "source")};
    if (tool.image.empty() || tool.copy.empty() || tool.bin.empty() || tool.source.empty())
      throw std::runtime_error(fmt::format("images: injected tool '{}' needs image, copy, bin and source", tool.name));
    b.injected_[tool.name] = tool;
  }
  b.gke_latest_ = str(root["gkeLatestDriver"], "version");
  b.gke_latest_source_ = str(root["gkeLatestDriver"], "source");
  for (const auto& f : root["families"]) {
    Family fam;
    ImageFacts& base = fam.base;
    base.family = str(f, "name");
    base.repository = str(f, "repository");
    base.source = str(f, "source");
    if (base.family.empty() || base.repository.empty() || base.source.empty())
      throw std::runtime_error(fmt::format("images: family '{}' needs name, repository and source", base.family));
    base.user = str(f, "user");
    if (f["uid"]) base.uid = f["uid"].as<int>();
    base.home = str(f, "home");
    if (base.uid) base.users[*base.uid] = base.home;
    base.users.emplace(0, "/root");
    if (f["users"])
      for (const auto& u : f["users"]) base.users[u.first.as<int>()] = u.second.as<std::string>();
    base.tools = words(f, "tools");
    base.lacks = words(f, "lacks");
    for (const auto& r : f["tags"]) {
      Row row{str(r, "match"), str(r, "cuda"), str(r, "minDriver"), str(r, "example"), ints(r, "archs"), std::nullopt};
      if (r["ptx"]) row.ptx = r["ptx"].as<int>();
      try {
        (void)std::regex(row.match, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        throw std::runtime_error(fmt::format("images: family '{}' tag pattern '{}': {}", base.family, row.match, e.what()));
      }
      fam.rows.push_back(std::move(row));
    }
    b.families_.push_back(std::move(fam));
  }
  return b;
}

std::string ImageBook::cuda_driver(const std::string& cuda) const {
  if (cuda.empty()) return "";
  const std::string major = cuda.substr(0, cuda.find('.'));
  auto it = cuda_drivers_.find(major);
  return it == cuda_drivers_.end() ? "" : it->second;
}

std::string ImageBook::with_kernels_for(const ImageFacts& f, int cc) const {
  for (const auto& fam : families_) {
    if (fam.base.family != f.family) continue;
    for (const auto& row : fam.rows)
      if (!row.example.empty() && std::find(row.archs.begin(), row.archs.end(), cc) != row.archs.end())
        return f.repository + ":" + row.example;
  }
  return "";
}

std::string ImageBook::runs_on_driver(const ImageFacts& f, const std::string& driver) const {
  for (const auto& fam : families_) {
    if (fam.base.family != f.family) continue;
    for (const auto& row : fam.rows) {
      const std::string need = row.min_driver.empty() ? cuda_driver(row.cuda) : row.min_driver;
      if (!row.example.empty() && !need.empty() && compare_driver(need, driver) <= 0)
        return f.repository + ":" + row.example;
    }
  }
  return "";
}

const InjectedTool* ImageBook::injected(const std::string& name) const {
  auto it = injected_.find(name);
  return it == injected_.end() ? nullptr : &it->second;
}

std::optional<int> ImageBook::compute_capability(const std::string& accelerator) const {
  auto it = capabilities_.find(accelerator);
  if (it == capabilities_.end()) return std::nullopt;
  return it->second;
}

namespace {

/// A tag pattern compiled once per process (the checks ask for every step's image); the map's nodes
/// stay where they are, so the reference outlives the lock.
const std::regex& compiled(const std::string& pattern) {
  static std::mutex lock;
  static std::map<std::string, std::regex> cache;
  const std::lock_guard<std::mutex> hold(lock);
  auto it = cache.find(pattern);
  if (it == cache.end()) it = cache.emplace(pattern, std::regex(pattern, std::regex::ECMAScript)).first;
  return it->second;
}

}  // namespace

std::optional<ImageFacts> ImageBook::facts(const std::string& reference) const {
  // The tag patterns run on well-formed references only (a tag of at most 128 characters): a
  // backtracking std::regex recurses per character.
  if (!image_reference_bounds_error(reference).empty()) return std::nullopt;
  std::string tag;
  const std::string repo = image_repository(reference, &tag);
  for (const auto& fam : families_) {
    if (fam.base.repository != repo) continue;
    ImageFacts out = fam.base;
    out.tag = tag;
    for (const auto& row : fam.rows) {
      std::smatch m;
      if (!std::regex_match(tag, m, compiled(row.match))) continue;
      out.cuda = row.cuda.empty() && m.size() > 1 ? m[1].str() : row.cuda;
      out.archs = row.archs;
      out.ptx = row.ptx;
      out.min_driver = row.min_driver.empty() ? cuda_driver(out.cuda) : row.min_driver;
      break;
    }
    return out;
  }
  return std::nullopt;
}

std::vector<const InjectedTool*> injected_tools(const System& sys, const Step& step) {
  std::vector<const InjectedTool*> out;
  if (const ComputeCluster* c = sys.compute_cluster(step.cluster); c && !c->steps_have_own_pods()) return out;
  if (step.inputs.empty() && !step.outputs) return out;
  const auto f = image_book().facts(step.image);
  if (f && f->tools.count("aws")) return out;
  if (const InjectedTool* aws = image_book().injected("aws")) out.push_back(aws);
  return out;
}

const ImageBook& image_book() {
  static const ImageBook b = [] {
    const auto* f = find_embedded("stdlib/images.yaml");
    if (!f) throw std::logic_error("stdlib/images.yaml is not embedded");
    return ImageBook::parse(std::string(f->data));
  }();
  return b;
}

}  // namespace trainc
