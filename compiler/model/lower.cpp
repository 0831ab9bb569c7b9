#include "model/lower.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "base/data_path.h"
#include "base/overloaded.h"
#include "base/spelling.h"
#include "base/units.h"
#include "common/units.h"
#include "model/build_context.h"
#include "model/catalog.h"
#include "base/embedded.h"

namespace trainc {
namespace {

using json = nlohmann::json;

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

StringMap string_map(const json& obj, const char* key) {
  StringMap out;
  if (obj.contains(key))
    for (const auto& [k, v] : obj[key].items()) out[k] = scalar_text(v);
  return out;
}

/// `env`: plain values into `plain`, `{secretRef: {name, key}}` into `secrets`.
void split_env(const json& obj, StringMap& plain, SecretEnvMap& secrets) {
  if (!obj.contains("env")) return;
  for (const auto& [k, v] : obj["env"].items()) {
    if (v.is_object()) secrets[k] = SecretEnv{v["secretRef"]["name"], v["secretRef"]["key"]};
    else plain[k] = scalar_text(v);
  }
}

/// List items may be numbers or booleans in the spec ("[--epochs, 1]"); the model keeps text.
std::vector<std::string> string_list(const json& arr) {
  std::vector<std::string> out;
  for (const auto& v : arr) out.push_back(scalar_text(v));
  return out;
}

/// A bucket URL such as "gs://bucket/a/b", split into "gs", "bucket" and "/a/b".
struct BucketUrl {
  std::string scheme, bucket, path;
};

/// `text` as a bucket URL ("<scheme>://<bucket>[/path]"), or nullopt when it is not one.
std::optional<BucketUrl> parse_bucket_url(std::string_view text) {
  const size_t sep = text.find("://");
  if (sep == std::string_view::npos || sep == 0) return std::nullopt;
  const std::string_view rest = text.substr(sep + 3);
  const size_t slash = rest.find('/');
  BucketUrl url{std::string(text.substr(0, sep)), std::string(rest.substr(0, slash)),
                slash == std::string_view::npos ? "" : std::string(rest.substr(slash))};
  if (url.bucket.empty()) return std::nullopt;
  return url;
}

/// A "<store>:/path" reference naming the same objects as `path` in `bucket`.
struct StoreSuggestion {
  std::string store, text;
};

/// The reference through the store whose bucket is `bucket` and whose prefix `path` lies under
/// (the longest such prefix); only stores of the URL's kind when `scheme` is "gs" or "s3".
std::optional<StoreSuggestion> ref_through_store(const std::map<std::string, Store>& stores, std::string_view scheme,
                                                 std::string_view bucket, std::string_view path) {
  const auto trim = [](std::string_view s) {
    while (s.starts_with('/')) s.remove_prefix(1);
    while (s.ends_with('/')) s.remove_suffix(1);
    return s;
  };
  std::optional<StoreSuggestion> best;
  size_t best_prefix = 0;
  for (const auto& [name, st] : stores) {
    if (st.bucket != bucket) continue;
    if ((scheme == "gs" && st.kind != Store::Kind::gcs) || (scheme == "s3" && st.kind != Store::Kind::s3)) continue;
    const std::string_view prefix = trim(st.prefix);
    std::string_view rest = path;
    while (rest.starts_with("//")) rest.remove_prefix(1);
    if (!prefix.empty()) {
      const std::string_view under = trim(rest);
      if (!under.starts_with(prefix) || (under.size() > prefix.size() && under[prefix.size()] != '/')) continue;
      rest.remove_prefix(rest.find(prefix) + prefix.size());
    }
    if (best && prefix.size() <= best_prefix) continue;
    best = StoreSuggestion{name, fmt::format("{}:{}{}", name, rest.starts_with('/') ? "" : "/", rest)};
    best_prefix = prefix.size();
  }
  return best;
}

template <typename T>
T get_or(const json& obj, const char* key, T fallback) {
  return obj.contains(key) ? obj[key].get<T>() : fallback;
}

/// A pod path: absolute as written, or relative to the step's workdir; normalised, no trailing '/'.
std::string pod_path(const std::string& workdir, const std::string& p) {
  std::filesystem::path joined = p.starts_with("/") ? std::filesystem::path(p) : std::filesystem::path(workdir) / p;
  std::string s = joined.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

/// Folders of the container's own system that no step may sync into, write outputs or
/// checkpoints to, or mount a bucket over.
constexpr std::string_view kSystemFolders[] = {"/bin",  "/boot", "/dev", "/etc", "/lib", "/lib32",   "/lib64",  "/proc",
                                               "/root", "/run",  "/sbin", "/sys", "/usr", "/var/lib", "/var/run"};

/// Why `written` (a pod path as the spec gives it, resolved against `workdir`) may not be used for
/// what the step writes or mounts; "" when it may.
std::string unconfined(const std::string& workdir, const std::string& written) {
  if (!written.starts_with("/")) {
    const std::string rel = std::filesystem::path(written).lexically_normal().generic_string();
    if (rel == ".." || rel.starts_with("../"))
      return fmt::format("'{}' climbs out of the step's workdir {}; write a path inside it, or an absolute path",
                         written, workdir);
  }
  const std::string p = pod_path(workdir, written);
  if (p == "/") return "'/' is the container's root; name a folder of the workload's own, such as /workspace/data";
  for (std::string_view sys : kSystemFolders)
    if (p == sys || p.starts_with(std::string(sys) + "/"))
      return fmt::format("'{}' is {}the system folder {}; name a folder of the workload's own, such as "
                         "/workspace/data",
                         written, p == sys ? "" : "inside ", sys);
  return "";
}

std::vector<std::string> keys_of(const auto& map) {
  std::vector<std::string> keys;
  for (const auto& [k, _] : map) keys.push_back(k);
  return keys;
}

/// Where trainrt steps see the GCS stores they name.
constexpr std::string_view kStoreMountRoot = "/mnt/stores";

class Lowerer {
 public:
  Lowerer(const Document& doc, Diagnostics& diags) : doc_(doc), diags_(diags), root_(doc.root) {
    // Entities pruned after a schema error: references to them are not reported as unknown.
    for (const auto& e : doc.pruned) {
      const auto segs = ptr_segments(e);
      if (segs.size() == 2 && segs[0] == "pipeline") {
        const json* st = doc.root.contains(nlohmann::json::json_pointer(e)) ? &doc.root.at(nlohmann::json::json_pointer(e))
                                                                             : nullptr;
        if (st && st->is_object() && st->contains("name") && (*st)["name"].is_string())
          pruned_.emplace("step", (*st)["name"]);
      } else if (!segs.empty()) {
        pruned_.emplace(segs[0] == "cluster" ? "pools" : segs[0], segs.back());
      }
    }
    if (root_.contains("pipeline") && root_["pipeline"].is_array())
      for (const auto& st : root_["pipeline"])
        if (st.is_object() && st.contains("name") && st["name"].is_string()) step_names_.push_back(st["name"]);
  }

  System run() {
    System sys;
    sys.ptr = "";
    sys.name = root_["name"];
    if (root_.contains("namespace")) {
      sys.ns = root_["namespace"];
      sys.owns_namespace = false;
    } else {
      sys.ns = sys.name;
    }
    sys.service_account = get_or<std::string>(root_, "serviceAccount", "");
    if (root_.contains("serviceAccountToken"))
      sys.service_account_token_reason = get_or<std::string>(root_["serviceAccountToken"], "reason", "");
    if (root_.contains("runtime")) sys.runtime_image = root_["runtime"]["image"];
    sys.labels = string_map(root_, "labels");
    if (root_.contains("gcp")) {
      const json& g = root_["gcp"];
      sys.gcp = Gcp{g["project"], g["region"], get_or<std::string>(g, "zone", ""), "/gcp", {}, {}, {}};
      gcp_extras(sys.name, g, *sys.gcp);
    }
    if (root_.contains("ci")) sys.ci = ci(sys, root_["ci"]);
    const json cluster = root_.value("cluster", json::object());
    sys.cluster.name = get_or<std::string>(cluster, "name", sys.name);
    sys.cluster.release_channel = get_or<std::string>(cluster, "releaseChannel", "");
    if (cluster.contains("pools"))
      for (const auto& [name, p] : cluster["pools"].items())
        if (!pruned("pools", name)) sys.pools[name] = pool(name, p);
    if (root_.contains("storage"))
      for (const auto& [name, s] : root_["storage"].items())
        if (!pruned("storage", name)) sys.stores[name] = store(sys, name, s);
    if (root_.contains("identity")) {
      sys.identity = identity(sys, root_["identity"], "/identity", "", "");
      // The system's workloads may use every GCS bucket: a role on each, never on the project.
      for (const auto& [name, st] : sys.stores)
        if (st.kind == Store::Kind::gcs)
          sys.identity->grants.push_back(
              {name, st.read_only ? "roles/storage.objectViewer" : "roles/storage.objectUser"});
    }
    if (root_.contains("clusters"))
      for (const auto& [name, c] : root_["clusters"].items()) {
        if (pruned("clusters", name))
          references(sys, c, ptr_key("/clusters", name));
        else
          sys.clusters[name] = compute_cluster(sys, name, c);
      }
    if (root_.contains("istio")) sys.istio = Istio{get_or(root_["istio"], "install", true), "/istio"};
    if (root_.contains("queue")) sys.queue = Queue{get_or<std::string>(root_["queue"], "name", sys.name), "/queue"};
    if (root_.contains("services"))
      for (const auto& [name, s] : root_["services"].items()) {
        if (pruned("services", name))
          references(sys, s, ptr_key("/services", name));
        else
          sys.services[name] = service(sys, name, s);
      }
    std::vector<Step> steps;
    const json pipeline = root_.value("pipeline", json::array());
    for (size_t i = 0; i < pipeline.size(); ++i) {
      const std::string ptr = ptr_index("/pipeline", i);
      if (doc_.pruned.count(ptr))
        references(sys, pipeline[i], ptr);
      else
        steps.push_back(step(sys, pipeline[i], ptr));
    }
    check_step_names(steps);
    sys.steps = dependency_order(std::move(steps));
    objectives_from_tables(sys.steps);
    sys.builds = std::move(builds_);
    finish_builds(sys);
    default_versioning(sys);
    return sys;
  }

 private:
  /// `gcp`'s state, network and registry (the registry also when any workload builds its image).
  void gcp_extras(const std::string& system, const json& g, Gcp& gcp) {
    if (g.contains("state"))
      gcp.state = TerraformState{g["state"]["bucket"], get_or<std::string>(g["state"], "prefix", system)};
    if (g.contains("network")) {
      const json& n = g["network"];
      Network net;
      net.name = n["name"];
      net.subnet = get_or<std::string>(n, "subnet", net.name + "-" + gcp.region);
      net.cidr = get_or<std::string>(n, "cidr", net.cidr);
      net.pods = get_or<std::string>(n, "pods", net.pods);
      net.services = get_or<std::string>(n, "services", net.services);
      net.create = get_or(n, "create", true);
      net.ptr = "/gcp/network";
      gcp.network = net;
    }
    auto builds = [](const json& list) {
      if (list.is_array()) return std::any_of(list.begin(), list.end(), [](const json& w) { return w.is_object() && w.contains("build"); });
      if (list.is_object()) {
        for (const auto& [_, w] : list.items())
          if (w.is_object() && w.contains("build")) return true;
      }
      return false;
    };
    const bool any_build = builds(root_.value("pipeline", json::array())) || builds(root_.value("clusters", json::object())) ||
                           builds(root_.value("services", json::object()));
    if (g.contains("registry") || any_build) {
      const json r = g.value("registry", json::object());
      gcp.registry = Registry{get_or<std::string>(r, "repository", system), get_or<std::string>(r, "location", gcp.region),
                              get_or(r, "create", true), g.contains("registry") ? "/gcp/registry" : "/gcp"};
    }
  }

  Ci ci(const System& sys, const json& c) {
    Ci out;
    out.ptr = "/ci";
    if (c.contains("github")) {
      const json& g = c["github"];
      GithubCi gh;
      gh.ptr = "/ci/github";
      gh.provider = g["workloadIdentityProvider"];
      gh.service_account = g["serviceAccount"];
      gh.plan_service_account = get_or<std::string>(g, "planServiceAccount", "");
      gh.branch = get_or<std::string>(g, "branch", "main");
      gh.environment = get_or<std::string>(g, "environment", "");
      gh.trainc_image = g["traincImage"];
      out.github = gh;
    }
    if (c.contains("cloudbuild")) {
      const json& b = c["cloudbuild"];
      CloudBuildCi cb;
      cb.ptr = "/ci/cloudbuild";
      cb.service_account = get_or<std::string>(b, "serviceAccount", "");
      cb.timeout_seconds = duration(b, "timeout", 7200, cb.ptr);
      if (b.contains("machineType")) {
        std::string m = b["machineType"];
        std::transform(m.begin(), m.end(), m.begin(), [](char ch) { return ch == '-' ? '_' : static_cast<char>(std::toupper(ch)); });
        cb.machine_type = m;
      }
      out.cloudbuild = cb;
    }
    if (!sys.gcp)
      doc_.error(diags_, out.ptr, "'ci' deploys to Google Cloud and needs 'gcp' (project, region and state)", Anchor::key);
    else if (!sys.gcp->state)
      doc_.error(diags_, out.ptr,
                 "'ci' runs Terraform on machines that forget local state: set 'gcp.state' (a GCS bucket for "
                 "Terraform's state, e.g. state: {bucket: my-project-tf-state})",
                 Anchor::key);
    return out;
  }

  /// The image `w.build` makes: checks the build, digests what it reads for the tag, records it,
  /// and returns the reference the manifests use ("" when it has errors).
  std::string built_image(const System& sys, const json& w, const std::string& wptr, const std::string& name,
                          const std::string& of, const std::string& workdir) {
    const json& bj = w["build"];
    const std::string ptr = ptr_key(wptr, "build");
    if (w.contains("image")) {
      doc_.error(diags_, ptr,
                 fmt::format("{} '{}' names both 'image' and 'build'; keep 'build' to have trainc's CI build the image, "
                             "or 'image' for one built elsewhere",
                             of, name),
                 Anchor::key, {doc_.note(ptr_key(wptr, "image"), "the image is named here", Anchor::key)});
      return "";
    }
    Build b;
    b.name = name;
    b.of = of;
    b.ptr = ptr;
    b.workdir = workdir;
    b.context = get_or<std::string>(bj, "context", ".");
    b.dockerfile = get_or<std::string>(bj, "dockerfile", "");
    b.base = get_or<std::string>(bj, "base", "");
    b.requirements = get_or<std::string>(bj, "requirements", "");
    if (bj.contains("copy")) b.copy = bj["copy"].get<std::vector<std::string>>();
    const size_t errors = diags_.error_count();
    if (b.dockerfile.empty() == b.base.empty())
      doc_.error(diags_, ptr,
                 b.base.empty() ? "'build' needs 'dockerfile' (your Dockerfile in the context) or 'base' (the image "
                                  "trainc's generated Dockerfile starts from)"
                                : "'build' takes 'dockerfile' or 'base', not both: 'base' makes trainc write the "
                                  "Dockerfile, 'dockerfile' uses yours",
                 Anchor::key);
    if (!b.dockerfile.empty())
      for (const char* key : {"requirements", "copy"})
        if (bj.contains(key))
          doc_.error(diags_, ptr_key(ptr, key),
                     fmt::format("'{}' is for Dockerfiles trainc writes (with 'base'); with 'dockerfile' your "
                                 "Dockerfile copies and installs what it needs",
                                 key),
                     Anchor::key);
    if (!b.base.empty()) {
      const std::string last = b.base.substr(b.base.rfind('/') == std::string::npos ? 0 : b.base.rfind('/') + 1);
      if (b.base.find('@') == std::string::npos && (last.find(':') == std::string::npos || last.ends_with(":latest")))
        doc_.error(diags_, ptr_key(ptr, "base"),
                   fmt::format("base image '{}' is not pinned: name a version tag or digest (e.g. "
                               "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime), so a rebuild gives the same image",
                               b.base));
    }
    auto inside = [&](const std::string& rel, const std::string& at, std::string_view folder) {
      if (!stays_inside(rel))
        doc_.error(diags_, at, fmt::format("'{}' leaves {}: paths here are relative and stay inside it", rel, folder));
    };
    inside(b.context, ptr_key(ptr, "context"), "the spec's folder");
    if (!b.dockerfile.empty()) inside(b.dockerfile, ptr_key(ptr, "dockerfile"), "the build context");
    if (!b.requirements.empty()) inside(b.requirements, ptr_key(ptr, "requirements"), "the build context");
    for (size_t i = 0; i < b.copy.size(); ++i) inside(b.copy[i], ptr_index(ptr_key(ptr, "copy"), i), "the build context");
    b.context = std::filesystem::path(b.context).lexically_normal().generic_string();
    if (b.context.empty()) b.context = ".";
    if (b.context.size() > 1 && b.context.back() == '/') b.context.pop_back();
    if (!sys.gcp) {
      doc_.error(diags_, ptr,
                 fmt::format("{} '{}' builds its image, which is pushed to Artifact Registry: add 'gcp' (project and "
                             "region), or name a prebuilt 'image'",
                             of, name),
                 Anchor::key);
    }
    if (auto it = builds_.find(name); it != builds_.end()) {
      doc_.error(diags_, ptr,
                 fmt::format("the {} '{}' and the {} '{}' both build an image named '{}'; images are named after "
                             "their workload, so rename one",
                             it->second.of, name, of, name, name),
                 Anchor::key, {doc_.note(it->second.ptr, "the other build", Anchor::key)});
    }
    if (diags_.error_count() > errors) return "";
    if (bj.contains("tag")) b.tag = bj["tag"];
    // The tag and the reference come last (finish_builds): a step's build also digests the
    // folders it writes, known only once the whole step is lowered.
    builds_.emplace(name, std::move(b));
    return "";
  }

  /// Digests every build (checking its files even when the spec names the tag), then gives each
  /// workload that builds, and each client step of a cluster that builds, the image's reference.
  void finish_builds(System& sys) {
    auto spec_dir = std::filesystem::path(doc_.file->name()).parent_path();
    if (spec_dir.empty()) spec_dir = ".";
    for (auto& [name, b] : sys.builds) {
      const EmbeddedFile* tmpl = b.generated() ? find_embedded(kImageDockerfileTemplate) : nullptr;
      auto tag = build_tag(spec_dir, b, tmpl ? tmpl->data : std::string_view());
      if (auto* err = std::get_if<BuildInputError>(&tag)) {
        doc_.error(diags_, err->ptr, err->message);
        continue;
      }
      if (b.tag.empty()) b.tag = std::get<std::string>(tag);
      b.image = sys.gcp->image_path(name) + ":" + b.tag;
    }
    auto built = [&](const std::string& name, std::string_view of) -> const Build* {
      auto it = sys.builds.find(name);
      return it != sys.builds.end() && it->second.of == of ? &it->second : nullptr;
    };
    for (auto& [name, c] : sys.clusters)
      if (const Build* b = built(name, "cluster")) c.image = b->image;
    for (auto& [name, s] : sys.services)
      if (const Build* b = built(name, "service")) s.image = b->image;
    for (auto& s : sys.steps) {
      if (const Build* b = built(s.name, "step")) s.image = b->image;
      else if (const ComputeCluster* c = sys.compute_cluster(s.cluster); c && s.image.empty()) s.image = c->image;
    }
  }

  Pool pool(const std::string& name, const json& p) {
    Pool out;
    out.name = name;
    out.ptr = ptr_key("/cluster/pools", name);
    out.machine = p["machine"];
    if (p.contains("accelerator"))
      out.accelerator = Accelerator{p["accelerator"]["type"], integer(p["accelerator"], "count", 0, ptr_key(out.ptr, "accelerator"))};
    const MachineType* m = catalog().machine(out.machine);
    if (!m) {
      doc_.error(diags_, ptr_key(out.ptr, "machine"),
                 fmt::format("unknown machine type '{}'{}", out.machine, did_you_mean(out.machine, catalog().machine_names())) +
                     (suggest(out.machine, catalog().machine_names()) ? "" : "; the catalog (stdlib/catalog.yaml) lists the machine types trainc knows"));
    } else {
      out.vcpus = m->vcpus;
      out.memory_gib = m->memory_gib;
      out.arm = m->arm;
      out.allocatable_cpu = catalog().allocatable_cpu(*m);
      out.allocatable_memory = catalog().allocatable_memory(*m);
      // Built-in GPUs come from the catalog; checks compare them with any the spec wrote.
      if (m->gpus > 0) out.accelerator = Accelerator{m->accelerator, m->gpus};
      if (m->tpu_chips > 0 && p.contains("tpu")) {
        std::string topo = p["tpu"]["topology"];
        int chips = topology_chips(topo);
        out.tpu = TpuSlice{m->tpu_generation, m->tpu_accelerator, topo, m->tpu_chips,
                           chips > 0 && chips % m->tpu_chips == 0 ? chips / m->tpu_chips : 0,
                           integer(p["tpu"], "slices", 1, ptr_key(out.ptr, "tpu"))};
      }
    }
    out.nodes = integer(p, "nodes", out.tpu ? out.tpu->hosts : 1, out.ptr);
    if (p.contains("autoscaling")) {
      const std::string aptr = ptr_key(out.ptr, "autoscaling");
      out.autoscaling = std::pair<int, int>{integer(p["autoscaling"], "min", 0, aptr), integer(p["autoscaling"], "max", 0, aptr)};
    }
    out.provisioning = get_or<std::string>(p, "provisioning", "standard");
    out.reservation = get_or<std::string>(p, "reservation", "");
    out.rdma = get_or(p, "rdma", false);
    out.disk_gb = integer(p, "diskSizeGb", 0, out.ptr);
    out.labels = string_map(p, "labels");
    if (p.contains("taints"))
      for (const auto& t : p["taints"]) out.taints.push_back({t["key"], get_or<std::string>(t, "value", ""), t["effect"]});
    return out;
  }

  /// The identity at `ptr` (`i` may be empty: then `ksa` and `gsa` are the defaults). `of` names
  /// the service it belongs to, "" for the system's.
  Identity identity(const System& sys, const json& i, const std::string& ptr, const std::string& of,
                    const std::string& default_gsa) {
    Identity out;
    out.ptr = ptr;
    out.of = of;
    out.ksa = get_or<std::string>(i, "serviceAccount", of + "-server");
    // A named Kubernetes account names the Google one too, unless the spec says otherwise.
    out.gsa = get_or<std::string>(i, "gcpServiceAccount",
                                  default_gsa.empty() || i.contains("serviceAccount") ? out.ksa : default_gsa);
    if (!of.empty()) {
      if (!sys.gcp)
        doc_.error(diags_, ptr_key("/services", of),
                   fmt::format("service '{}' reads its models from GCS as its own Google service account, which "
                               "needs 'gcp' (project and region)",
                               of),
                   Anchor::key);
    } else {
      if (!sys.gcp)
        doc_.error(diags_, out.ptr, "'identity' binds a Google service account and needs 'gcp' (project and region)",
                   Anchor::key);
      if (!sys.service_account.empty())
        doc_.error(diags_, "/serviceAccount",
                   "set either 'serviceAccount' (an existing account) or 'identity' (one trainc creates), not both",
                   Anchor::key, {doc_.note(out.ptr, "'identity' is set here", Anchor::key)});
    }
    if (out.gsa.size() < 6 || out.gsa.size() > 30) {
      const std::string at = i.contains("gcpServiceAccount") ? ptr_key(ptr, "gcpServiceAccount")
                              : i.contains("serviceAccount") ? ptr_key(ptr, "serviceAccount")
                                                             : ptr_key("/services", of);
      doc_.error(diags_, at,
                 fmt::format("Google service account ids are 6 to 30 characters; '{}' has {}: set {}", out.gsa,
                             out.gsa.size(), of.empty() ? "'gcpServiceAccount'" : "'identity.gcpServiceAccount'"),
                 i.contains("gcpServiceAccount") || i.contains("serviceAccount") ? Anchor::value : Anchor::key);
    }
    return out;
  }

  /// "<store>:/path" in a GCS store, as a gs:// address.
  StoreRef gcs_ref(const System& sys, const std::string& text, const std::string& ptr, std::string_view who) {
    StoreRef ref;
    ref.ptr = ptr;
    const Store* s = split_store_ref(sys, text, ptr, ref.store, ref.path);
    if (!s) return ref;
    if (s->kind != Store::Kind::gcs) {
      doc_.error(diags_, ptr,
                 fmt::format("store '{}' is an S3 bucket; {} reads from GCS with Workload Identity: name a store with "
                             "'gcs'",
                             ref.store, who));
      return ref;
    }
    std::string path = ref.path;
    while (path.ends_with("/") && path.size() > 1) path.pop_back();
    ref.url = fmt::format("gs://{}{}{}", s->bucket, s->prefix.empty() ? "" : "/" + s->prefix, path == "/" ? "" : path);
    return ref;
  }

  /// Flags trainc sets on tritonserver itself, which `args` may not repeat.
  static constexpr std::array<std::string_view, 5> kTritonOwnFlags = {"--model-repository", "--model-store", "--http-port",
                                                                      "--grpc-port", "--metrics-port"};

  Triton triton(const System& sys, const json& t, const std::string& ptr) {
    Triton out;
    out.repository = gcs_ref(sys, t["repository"], ptr_key(ptr, "repository"), "Triton");
    if (t.contains("models")) out.models = string_list(t["models"]);
    if (t.contains("args")) out.args = string_list(t["args"]);
    for (size_t i = 0; i < out.args.size(); ++i) {
      const std::string flag = out.args[i].substr(0, out.args[i].find('='));
      // tritonserver reads its flags with getopt_long, which takes any unambiguous prefix of one:
      // a prefix of an owned flag either sets it or stops the server as ambiguous.
      std::vector<std::string> owned;
      for (std::string_view own : kTritonOwnFlags)
        if (flag.size() > 2 && own.starts_with(flag)) owned.push_back(fmt::format("'{}'", own));
      if (owned.empty()) continue;
      const std::string what =
          owned.size() == 1 && owned[0] == "'" + flag + "'"
              ? owned[0] + " is"
              : fmt::format("'{}' is short for {} (tritonserver takes any unambiguous prefix of a flag), which {}", flag,
                            fmt::join(owned, " or "), owned.size() == 1 ? "is" : "are");
      doc_.error(diags_, ptr_index(ptr_key(ptr, "args"), i),
                 fmt::format("{} trainc's to set: the repository comes from 'repository' and the ports are "
                             "fixed (http 8000, grpc 8001, metrics 8002) so probes, Service and gateway agree; "
                             "remove it",
                             what));
    }
    return out;
  }

  /// The one key that says which server a service runs.
  ServerKind server_kind(const System& sys, const json& s, const Service& svc) {
    std::vector<std::string_view> set;
    for (std::string_view name : alternative_names<ServerKind>::value)
      if (s.contains(std::string(name))) set.push_back(name);
    if (set.size() > 1)
      doc_.error(diags_, ptr_key(svc.ptr, std::string(set[1])),
                 fmt::format("service '{}' sets both '{}' and '{}'; keep one", svc.name, set[0], set[1]), Anchor::key,
                 {doc_.note(ptr_key(svc.ptr, std::string(set[0])), fmt::format("'{}' is set here", set[0]), Anchor::key)});
    if (set.empty()) {
      doc_.error(diags_, svc.ptr,
                 fmt::format("service '{}' says nothing to serve; add 'triton: {{repository: \"<store>:/path\"}}'",
                             svc.name),
                 Anchor::key);
      return Triton{};
    }
    const std::string kptr = ptr_key(svc.ptr, std::string(set.front()));
    const json& k = s[std::string(set.front())];
    return make_alternative<ServerKind>(set.front(),
                                        [&](std::type_identity<Triton>) { return triton(sys, k, kptr); });
  }

  Service service(const System& sys, const std::string& name, const json& s) {
    Service out;
    out.name = name;
    out.ptr = ptr_key("/services", name);
    out.server = server_kind(sys, s, out);
    out.image = s.contains("build") ? built_image(sys, s, out.ptr, name, "service", "/workspace")
                                    : get_or<std::string>(s, "image", catalog().server_image(out.kind()));
    out.image_pull_policy = get_or<std::string>(s, "imagePullPolicy", "IfNotPresent");
    const Pool* pool = nullptr;
    if (s.contains("pool")) {
      out.pool = s["pool"];
      pool = pool_ref(sys, out.pool, ptr_key(out.ptr, "pool"));
    }
    if (s.contains("autoscaling")) {
      const json& a = s["autoscaling"];
      const std::string aptr = ptr_key(out.ptr, "autoscaling");
      if (s.contains("replicas"))
        doc_.error(diags_, ptr_key(out.ptr, "replicas"),
                   "with 'autoscaling' the autoscaler sets the replicas; remove 'replicas' (autoscaling.min is where "
                   "it starts)",
                   Anchor::key, {doc_.note(aptr, "'autoscaling' is set here", Anchor::key)});
      out.min = integer(a, "min", 1, aptr);
      out.max = integer(a, "max", 1, aptr);
      out.pending_requests = integer(a, "pendingRequests", 10, aptr);
      if (out.min > out.max)
        doc_.error(diags_, ptr_key(aptr, "min"), fmt::format("autoscaling: min {} is above max {}", out.min, out.max),
                   Anchor::value, {doc_.note(ptr_key(aptr, "max"), "max set here")});
      else if (out.min == out.max && a.contains("pendingRequests"))
        doc_.error(diags_, ptr_key(aptr, "pendingRequests"),
                   fmt::format("min and max are both {}, so nothing scales on 'pendingRequests'; raise max or remove it",
                               out.min),
                   Anchor::key);
      out.replicas = out.min;
    } else {
      out.replicas = integer(s, "replicas", 1, out.ptr);
      out.min = out.max = out.replicas;
    }
    const bool gpu_pool = pool && pool->accelerator;
    out.gpus = integer(s, "gpus", gpu_pool ? pool->accelerator->count : 0, out.ptr);
    if (s.contains("resources")) {
      out.resources.requests = string_map(s["resources"], "requests");
      out.resources.limits = string_map(s["resources"], "limits");
    } else if (pool && pool->vcpus > 0) {
      // The pod's share of a node (the pods that fit on it by GPUs share its allocatable), less the
      // mesh's sidecar. It asks for half of that and may use all the memory: the other half leaves
      // room for GKE's own DaemonSets, whose requests depend on the cluster's features.
      const int per_node = out.gpus > 0 && gpu_pool ? std::max(1, pool->accelerator->count / out.gpus) : 1;
      const auto& proxy = catalog().istio_proxy();
      const bool sidecar = sys.istio.has_value();
      const double cpu = pool->allocatable_cpu / per_node - (sidecar ? proxy.cores : 0);
      const double mem = pool->allocatable_memory / per_node - (sidecar ? proxy.bytes : 0);
      auto millis = [](double cores) { return fmt::format("{}m", static_cast<long long>(std::floor(cores * 1000))); };
      auto mebis = [](double bytes) { return fmt::format("{}Mi", static_cast<long long>(std::floor(bytes / (1 << 20)))); };
      out.resources.requests = {{"cpu", millis(cpu / 2)}, {"memory", mebis(mem / 2)}};
      out.resources.limits = {{"memory", mebis(mem)}};
    } else {
      out.resources.requests = {{"cpu", "2"}, {"memory", "8Gi"}};
      out.resources.limits = {{"memory", "8Gi"}};
    }
    out.shm = s.contains("shm") ? scalar_text(s["shm"]) : fmt::format("{}Gi", std::max(1, 2 * out.gpus));
    out.startup_seconds = duration(s, "startupTimeout", 600, out.ptr);
    if (s.contains("expose") && s["expose"].contains("gateway")) {
      const json& g = s["expose"]["gateway"];
      out.expose.gateway = true;
      out.expose.ptr = ptr_key(ptr_key(out.ptr, "expose"), "gateway");
      out.expose.hosts = g.contains("hosts") ? string_list(g["hosts"]) : std::vector<std::string>{"*"};
      out.expose.path_prefix = get_or<std::string>(g, "pathPrefix", "");
    }
    const json id = s.value("identity", json::object());
    out.identity = identity(sys, id, ptr_key(out.ptr, "identity"), name, sys.name + "-" + name);
    match(out.server, [&](const Triton& t) {
      if (t.repository.url.empty()) return;
      // Read-only: the objects, and the bucket's metadata, which Triton's GCS client asks for first.
      out.identity.grants.push_back({t.repository.store, "roles/storage.objectViewer"});
      out.identity.grants.push_back({t.repository.store, "roles/storage.legacyBucketReader"});
    });
    split_env(s, out.env, out.secret_env);
    out.labels = string_map(s, "labels");
    out.security = pod_security(s, out.ptr);
    return out;
  }

  /// Buckets that hold checkpoints keep old versions unless the spec says otherwise.
  void default_versioning(System& sys) {
    for (auto& [name, st] : sys.stores) {
      if (st.kind != Store::Kind::gcs || root_["storage"][name]["gcs"].contains("versioning")) continue;
      for (const auto& step : sys.steps)
        for (const auto& m : step.mounts)
          if (m.store == name && step.checkpoints &&
              (step.checkpoints->path == m.path || step.checkpoints->path.starts_with(m.path + "/")))
            st.versioning = true;
    }
  }

  Store store(const System& sys, const std::string& name, const json& s) {
    Store out;
    out.name = name;
    out.ptr = ptr_key("/storage", name);
    if (s.contains("gcs")) {
      const json& g = s["gcs"];
      out.kind = Store::Kind::gcs;
      out.bucket = g["bucket"];
      out.prefix = get_or<std::string>(g, "prefix", "");
      std::string region = sys.gcp ? sys.gcp->region : "";
      std::transform(region.begin(), region.end(), region.begin(), ::toupper);
      out.location = get_or<std::string>(g, "location", region);
      out.versioning = get_or(g, "versioning", false);
      out.create = get_or(g, "create", true);
      out.read_only = get_or(g, "readOnly", false);
      if (!sys.gcp && out.create)
        doc_.error(diags_, out.ptr,
                   fmt::format("store '{}' is a GCS bucket for trainc to create, which needs 'gcp' (project and region); "
                               "add 'gcp' or set 'create: false' for an existing bucket",
                               name),
                   Anchor::key);
      return out;
    }
    const json& s3 = s["s3"];
    out.bucket = s3["bucket"];
    out.prefix = get_or<std::string>(s3, "prefix", "");
    while (out.prefix.starts_with("/")) out.prefix.erase(0, 1);
    while (out.prefix.ends_with("/")) out.prefix.pop_back();
    out.region = get_or<std::string>(s3, "region", "");
    out.endpoint = get_or<std::string>(s3, "endpoint", "");
    out.credentials_secret = get_or<std::string>(s3, "credentialsSecret", "");
    return out;
  }

  /// Splits "<store>:/path" (the schema checked the form) and looks the store up; an unknown
  /// store is reported, with a did-you-mean, and gives nullptr.
  const Store* split_store_ref(const System& sys, const std::string& text, const std::string& ptr, std::string& store,
                               std::string& path) {
    auto colon = text.find(':');
    store = text.substr(0, colon);
    path = text.substr(colon + 1);
    const Store* s = sys.store(store);
    if (!s) unknown_store(sys, store, ptr, text);
    return s;
  }

  /// Reports a reference to a store that is not declared (one left out after its own errors is
  /// declared); `text` is the whole "<store>:/path" where the reference is one. A URL
  /// ("gs://bucket/path") is answered with the form and the reference through the store that holds
  /// the bucket; a bucket's name written for a store's gets that store.
  void unknown_store(const System& sys, const std::string& store, const std::string& ptr, const std::string& text) {
    if (pruned("storage", store)) return;
    const auto names = declared(sys.stores, "storage");
    const std::string known = names.empty() ? "none is declared" : fmt::format("{}", fmt::join(names, ", "));
    std::string hint;
    if (const auto url = text.empty() ? std::nullopt : parse_bucket_url(text)) {
      hint = fmt::format(": write '<store>:/path', not a URL, where <store> is a key of 'storage' ({}); {}", known,
                         bucket_url_hint(sys, *url));
    } else if (names.empty()) {
      hint = "; declare it under 'storage'";
    } else if (hint = did_you_mean(store, names); hint.empty()) {
      // A bucket's name where the store's belongs: "my-bucket:/data".
      const auto ref = ref_through_store(sys.stores, "", store, text.empty() ? "/" : text.substr(text.find(':') + 1));
      hint = !ref ? fmt::format("; the stores of 'storage' are {}", known)
                  : fmt::format("; did you mean '{}'? (store '{}' is bucket '{}')", text.empty() ? ref->store : ref->text,
                                ref->store, store);
    }
    doc_.error(diags_, ptr,
               text.empty() ? fmt::format("unknown store '{}'{}", store, hint)
                            : fmt::format("unknown store '{}' in '{}'{}", store, text, hint));
  }

  /// What to write instead of a bucket URL: the reference through the store holding the bucket,
  /// else what keeps the stores of that bucket from holding the path, else a store to declare.
  static std::string bucket_url_hint(const System& sys, const BucketUrl& url) {
    if (const auto ref = ref_through_store(sys.stores, url.scheme, url.bucket, url.path))
      return fmt::format("did you mean '{}'? (store '{}' is bucket '{}')", ref->text, ref->store, url.bucket);
    const std::string kind = url.scheme == "gs" ? "gcs" : url.scheme == "s3" ? "s3" : "";
    for (const auto& [name, st] : sys.stores) {
      if (st.bucket != url.bucket) continue;
      const std::string other = st.kind == Store::Kind::gcs ? "gcs" : "s3";
      if (!kind.empty() && kind != other)
        return fmt::format("store '{}' is bucket '{}' in {}, not {}", name, url.bucket, other == "gcs" ? "GCS" : "S3",
                           kind == "gcs" ? "GCS" : "S3");
      return fmt::format("store '{}' is bucket '{}' under prefix '{}', which '{}' is outside", name, url.bucket,
                         st.prefix, url.path.empty() ? "/" : url.path);
    }
    return fmt::format("no store is bucket '{}': declare one under 'storage'{} and write '<name>:{}'", url.bucket,
                       kind.empty() ? "" : fmt::format(" (<name>: {{{}: {{bucket: {}}}}})", kind, url.bucket),
                       url.path.empty() ? "/" : url.path);
  }

  StoreRef store_ref(const System& sys, const std::string& text, const std::string& ptr) {
    StoreRef ref;
    ref.ptr = ptr;
    const Store* s = split_store_ref(sys, text, ptr, ref.store, ref.path);
    if (!s) return ref;
    if (s->kind == Store::Kind::gcs) {
      doc_.error(diags_, ptr,
                 fmt::format("store '{}' is a GCS bucket, which steps reach through 'mounts' (GCS FUSE), not by "
                             "syncing; mount it with mounts: [{{store: {}, path: /data}}]",
                             ref.store, ref.store));
      return ref;
    }
    ref.url = fmt::format("s3://{}{}{}", s->bucket, s->prefix.empty() ? "" : "/" + s->prefix, ref.path);
    return ref;
  }

  int duration(const json& obj, const char* key, int fallback, const std::string& ptr) {
    if (!obj.contains(key)) return fallback;
    const std::string text = obj[key].get<std::string>();
    auto d = parse_duration(text);
    if (!d || *d == 0) {
      // The shared grammar took it (the schema checked the pattern): say which spec rule it breaks.
      const auto ms = common::parse_duration_ms(text);
      const std::string why = !ms                   ? "is not a duration"
                              : *ms == 0              ? "is zero"
                              : *ms % 1000 != 0       ? "is not a whole number of seconds"
                                                     : "is longer than 2^31 seconds (68 years)";
      doc_.error(diags_, ptr_key(ptr, key),
                 fmt::format("'{}' {}; give a positive duration in whole seconds, such as 90s, 10m, 1h30m or 2d", text,
                             why));
      return fallback;
    }
    return *d;
  }

  /// Reports the compute cluster named at `ptr` when the spec declares none of that name.
  void cluster_ref(const System& sys, const std::string& name, const std::string& ptr) {
    if (sys.compute_cluster(name) || pruned("clusters", name)) return;
    const auto names = declared(sys.clusters, "clusters");
    doc_.error(diags_, ptr, fmt::format("unknown cluster '{}'{}", name,
                                        names.empty() ? "; declare it under 'clusters'" : did_you_mean(name, names)));
  }

  /// A pool named at `ptr`, or nullptr after reporting it unknown.
  const Pool* pool_ref(const System& sys, const std::string& name, const std::string& ptr) {
    const Pool* pool = sys.pool(name);
    if (!pool && !pruned("pools", name)) {
      std::string hint = declared(sys.pools, "pools").empty() ? "; no pools are declared under 'cluster.pools'"
                                           : did_you_mean(name, declared(sys.pools, "pools"));
      doc_.error(diags_, ptr, fmt::format("unknown pool '{}'{}", name, hint));
    }
    return pool;
  }

  /// Pods of a compute cluster. Workers take whole nodes of their pool (all GPUs, the allocatable
  /// CPU and memory); the head or scheduler (`lead`) takes no GPUs, and a whole node only of a
  /// CPU pool: on a GPU pool it asks for 2 CPUs and 8Gi.
  PodGroup pod_group(const System& sys, const std::string& name, const json& g, const std::string& ptr, bool lead,
                     bool fuse) {
    PodGroup out;
    out.name = name;
    out.ptr = ptr;
    const Pool* pool = nullptr;
    if (g.contains("pool")) {
      out.pool = g["pool"];
      pool = pool_ref(sys, out.pool, ptr_key(ptr, "pool"));
    }
    out.replicas = lead ? 1 : integer(g, "replicas", 1, ptr);
    if (lead && g.contains("replicas") && g["replicas"] != 1)
      doc_.error(diags_, ptr_key(ptr, "replicas"), fmt::format("the {} runs as one pod; remove 'replicas'", name));
    out.min = integer(g, "min", out.replicas, ptr);
    out.max = integer(g, "max", out.replicas, ptr);
    if (out.min > out.max)
      doc_.error(diags_, ptr_key(ptr, "min"), fmt::format("{}: min {} is above max {}", name, out.min, out.max), Anchor::value,
                 {doc_.note(ptr_key(ptr, "max"), "max set here")});
    else if (out.replicas < out.min || out.replicas > out.max)
      doc_.error(diags_, ptr_key(ptr, "replicas"),
                 fmt::format("{}: replicas {} is outside min {} and max {}", name, out.replicas, out.min, out.max));
    const bool gpu_pool = pool && pool->accelerator;
    out.gpus = integer(g, "gpus", gpu_pool && !lead ? pool->accelerator->count : 0, ptr);
    if (g.contains("resources")) {
      out.resources.requests = string_map(g["resources"], "requests");
      out.resources.limits = string_map(g["resources"], "limits");
    } else if (pool && pool->vcpus > 0 && !(lead && gpu_pool)) {
      const auto& sidecar = catalog().gcsfuse_sidecar();
      const double cpu = pool->allocatable_cpu - (fuse ? sidecar.cores : 0);
      const double mem = pool->allocatable_memory - (fuse ? sidecar.bytes : 0);
      const std::string cpu_q = fmt::format("{}m", static_cast<long long>(std::floor(cpu * 1000)));
      const std::string mem_q = fmt::format("{}Mi", static_cast<long long>(std::floor(mem / (1 << 20))));
      out.resources.requests = {{"cpu", cpu_q}, {"memory", mem_q}};
      out.resources.limits = {{"cpu", cpu_q}, {"memory", mem_q}};
    } else {
      out.resources.requests = {{"cpu", "2"}, {"memory", "8Gi"}};
      out.resources.limits = {{"memory", "8Gi"}};
    }
    out.shm = g.contains("shm") ? scalar_text(g["shm"]) : fmt::format("{}Gi", std::max(1, 2 * out.gpus));
    return out;
  }

  /// The Ray version the image's tag names ("rayproject/ray:2.52.0-gpu" -> "2.52.0"), or "".
  static std::string tag_version(const std::string& image) {
    auto colon = image.rfind(':');
    if (colon == std::string::npos || image.find('/', colon) != std::string::npos) return "";
    static const std::regex re(R"(^([0-9]+\.[0-9]+\.[0-9]+)(-.*)?$)");
    std::smatch m;
    const std::string tag = image.substr(colon + 1);
    return std::regex_match(tag, m, re) ? m[1].str() : "";
  }

  ComputeCluster compute_cluster(const System& sys, const std::string& name, const json& c) {
    ComputeCluster out;
    out.name = name;
    out.ptr = ptr_key("/clusters", name);
    if (c.contains("build"))
      out.image = built_image(sys, c, out.ptr, name, "cluster", "/workspace");
    else if (c.contains("image"))
      out.image = c["image"];
    else
      doc_.error(diags_, out.ptr, fmt::format("cluster '{}' needs 'image' (or 'build')", name), Anchor::key);
    out.image_pull_policy = get_or<std::string>(c, "imagePullPolicy", "IfNotPresent");
    split_env(c, out.env, out.secret_env);
    out.labels = string_map(c, "labels");
    out.security = pod_security(c, out.ptr);
    if (c.contains("mounts"))
      for (size_t i = 0; i < c["mounts"].size(); ++i)
        out.mounts.push_back(mount(sys, c["mounts"][i], ptr_index(ptr_key(out.ptr, "mounts"), i)));
    const bool fuse = !out.mounts.empty();
    const std::string engine = c["engine"];
    // The lead pod's key is the engine's own word; the other engine's word is a mistake.
    const char* lead_key = engine == Ray::kName ? "head" : "scheduler";
    const char* other_key = engine == Ray::kName ? "scheduler" : "head";
    if (c.contains(other_key))
      doc_.error(diags_, ptr_key(out.ptr, other_key),
                 fmt::format("{} clusters have a '{}', not a '{}'", engine, lead_key, other_key), Anchor::key);
    PodGroup lead = pod_group(sys, lead_key, c.value(lead_key, json::object()), ptr_key(out.ptr, lead_key), true, fuse);
    for (const auto& [g, spec] : c["workers"].items())
      out.workers.push_back(pod_group(sys, g, spec, ptr_key(ptr_key(out.ptr, "workers"), g), false, fuse));
    auto only_for = [&](const char* key, std::string_view for_engine) {
      if (c.contains(key) && engine != for_engine)
        doc_.error(diags_, ptr_key(out.ptr, key), fmt::format("'{}' applies to {} clusters only; remove it", key, for_engine),
                   Anchor::key);
    };
    only_for("version", Ray::kName);
    only_for("perJob", Ray::kName);
    only_for("threads", Dask::kName);
    only_for("rmmPoolSize", Dask::kName);
    out.engine = make_alternative<Engine>(
        engine,
        [&](std::type_identity<Ray>) {
          Ray r;
          r.head = lead;
          r.per_job = get_or(c, "perJob", false);
          r.ttl_after_finished = duration(c, "ttlAfterFinished", 600, out.ptr);
          if (c.contains("ttlAfterFinished") && !r.per_job)
            doc_.error(diags_, ptr_key(out.ptr, "ttlAfterFinished"),
                       "'ttlAfterFinished' applies to per-job clusters only; set perJob: true or remove it", Anchor::key);
          // A generated build runs on its base image, whose tag names the Ray version.
          const Build* built = nullptr;
          if (auto b = builds_.find(name); c.contains("build") && b != builds_.end()) built = &b->second;
          const std::string from_tag = tag_version(built ? built->base : out.image);
          r.version = get_or<std::string>(c, "version", from_tag);
          if (r.version.empty())
            doc_.error(diags_, out.ptr,
                       fmt::format("cluster '{}': the Ray version is not in the image tag '{}'; set 'version' (e.g. "
                                   "2.52.0) to the Ray version the image holds",
                                   name, out.image),
                       Anchor::key);
          else if (!from_tag.empty() && r.version != from_tag)
            doc_.error(diags_, ptr_key(out.ptr, "version"),
                       fmt::format("version {} disagrees with the image tag, which holds Ray {}; KubeRay and the "
                                   "autoscaler need the version the image runs",
                                   r.version, from_tag),
                       Anchor::value, {doc_.note(ptr_key(out.ptr, "image"), "the image is named here")});
          return r;
        },
        [&](std::type_identity<Dask>) {
          Dask d;
          d.scheduler = lead;
          d.threads = integer(c, "threads", 0, out.ptr);
          d.rmm_pool_size = get_or<std::string>(c, "rmmPoolSize", "");
          for (const auto& w : out.workers)
            if (w.min != w.max || c["workers"][w.name].contains("min"))
              doc_.error(diags_, ptr_key(w.ptr, c["workers"][w.name].contains("min") ? "min" : "max"),
                         "dask workers do not autoscale here; set 'replicas' (and scale with kubectl scale)",
                         Anchor::key);
          return d;
        });
    return out;
  }

  /// An integer the spec gave (else `fallback`), checked to fit `T`: the schema's maximums bound
  /// most fields, but Jsonnet may yield 1e20 as a float, and nothing may wrap around silently.
  template <class T>
  T integer(const json& obj, const char* key, T fallback, const std::string& ptr) {
    if (!obj.contains(key)) return fallback;
    const json& v = obj[key];
    using limits = std::numeric_limits<T>;
    const double top = std::ldexp(1.0, limits::digits);  // limits::max() + 1, exactly
    bool fits = false;
    T out{};
    if (v.is_number_unsigned()) {
      fits = v.get<unsigned long long>() <= static_cast<unsigned long long>(limits::max());
      if (fits) out = static_cast<T>(v.get<unsigned long long>());
    } else if (v.is_number_integer()) {
      const long long i = v.get<long long>();
      fits = i >= static_cast<long long>(limits::min()) && i <= static_cast<long long>(limits::max());
      if (fits) out = static_cast<T>(i);
    } else if (v.is_number_float()) {
      const double d = v.get<double>();
      fits = std::trunc(d) == d && d >= -top && d < top;
      if (fits) out = static_cast<T>(d);
    }
    if (!fits) {
      const bool whole = !v.is_number_float() || std::trunc(v.get<double>()) == v.get<double>();
      const bool high = v.is_number_unsigned() || (v.is_number_integer() && v.get<long long>() > 0) ||
                        (v.is_number_float() && v.get<double>() > 0);
      doc_.error(diags_, ptr_key(ptr, key),
                 !whole ? fmt::format("'{}' is {}, which is not a whole number", key, v.dump())
                 : high ? fmt::format("'{}' is {}, too large for trainc: at most {}", key, v.dump(), limits::max())
                        : fmt::format("'{}' is {}, too small for trainc: at least {}", key, v.dump(), limits::min()));
      return fallback;
    }
    return out;
  }

  Step step(const System& sys, const json& s, const std::string& ptr) {
    Step out;
    out.ptr = ptr;
    out.name = s["name"];
    out.image = get_or<std::string>(s, "image", "");
    out.image_pull_policy = get_or<std::string>(s, "imagePullPolicy", "IfNotPresent");
    if (s.contains("needs")) out.needs = s["needs"].get<std::vector<std::string>>();
    const Pool* pool = nullptr;
    if (s.contains("pool")) {
      out.pool = s["pool"];
      pool = pool_ref(sys, out.pool, ptr_key(ptr, "pool"));
    }
    if (s.contains("cluster")) {
      out.cluster = s["cluster"];
      cluster_ref(sys, out.cluster, ptr_key(ptr, "cluster"));
      if (s.contains("nodes") && s["nodes"].is_number() && s["nodes"].get<double>() > 1)
        doc_.error(diags_, ptr_key(ptr, "nodes"),
                   fmt::format("step '{}' runs on cluster '{}', which spreads its work; the step itself is one pod: "
                               "remove 'nodes' (grow the cluster's workers instead)",
                               out.name, out.cluster),
                   Anchor::value, {doc_.note(ptr_key(ptr, "cluster"), "the cluster is named here")});
    }
    // A TPU step runs one pod per host of each slice it spans.
    out.nodes = integer(s, "nodes", pool && pool->tpu && pool->tpu->hosts > 0 ? pool->tpu->hosts : 1, ptr);
    out.slices = integer(s, "slices", 1, ptr);
    if (s.contains("slices") && !(pool && pool->tpu))
      doc_.error(diags_, ptr_key(ptr, "slices"),
                 pool ? fmt::format("'slices' is for steps on TPU pools; pool '{}' ({}) has no TPU slices: remove it",
                                    pool->name, pool->machine)
                      : std::string("'slices' is for steps on TPU pools: set 'pool' to a TPU pool or remove it"),
                 Anchor::key);
    out.gpus = integer(s, "gpus", pool && pool->accelerator ? pool->accelerator->count : 0, ptr);
    out.procs_per_node = integer(s, "procsPerNode", std::max(out.gpus, 1), ptr);
    out.workdir = pod_path("/", get_or<std::string>(s, "workdir", "/workspace"));
    out.run = kind(sys, s, ptr, out);
    if (s.contains("build")) out.image = built_image(sys, s, ptr, out.name, "step", out.workdir);
    // A client of a cluster runs the cluster's image unless it names its own: the versions match.
    if (const ComputeCluster* c = sys.compute_cluster(out.cluster); c && out.image.empty()) out.image = c->image;
    if (out.uses_trainrt()) {
      if (out.image.empty()) out.image = sys.runtime_image;
      add_store_mounts(sys, out);
    }
    split_env(s, out.env, out.secret_env);
    if (s.contains("resources")) {
      out.resources.requests = string_map(s["resources"], "requests");
      out.resources.limits = string_map(s["resources"], "limits");
    }
    // PyTorch data loaders pass batches through /dev/shm: 2Gi per GPU, at least 1Gi.
    out.shm = s.contains("shm") ? scalar_text(s["shm"]) : fmt::format("{}Gi", std::max(1, 2 * out.gpus));
    out.retries = integer(s, "retries", 2, ptr);
    if (s.contains("timeout")) out.timeout_seconds = duration(s, "timeout", 0, ptr);
    json hb = s.value("heartbeat", json::object());
    out.heartbeat.max_age_seconds = duration(hb, "maxAge", 3600, ptr_key(ptr, "heartbeat"));
    out.heartbeat.file = hb.contains("file") ? pod_path(out.workdir, hb["file"]) : "/tmp/trainc/step.log";
    if (hb.contains("file")) confine(out.workdir, hb["file"], ptr_key(ptr_key(ptr, "heartbeat"), "file"));
    if (s.contains("inputs")) {
      for (size_t i = 0; i < s["inputs"].size(); ++i) {
        const json& in = s["inputs"][i];
        std::string iptr = ptr_index(ptr_key(ptr, "inputs"), i);
        confine(out.workdir, in["to"], ptr_key(iptr, "to"));
        out.inputs.push_back(Sync{store_ref(sys, in["from"], ptr_key(iptr, "from")), pod_path(out.workdir, in["to"]), iptr});
      }
    }
    if (s.contains("mounts")) {
      for (size_t i = 0; i < s["mounts"].size(); ++i) {
        const json& m = s["mounts"][i];
        std::string mptr = ptr_index(ptr_key(ptr, "mounts"), i);
        out.mounts.push_back(mount(sys, m, mptr));
      }
    }
    if (s.contains("outputs")) {
      const json& o = s["outputs"];
      std::string optr = ptr_key(ptr, "outputs");
      confine(out.workdir, o["path"], ptr_key(optr, "path"));
      out.outputs = Outputs{pod_path(out.workdir, o["path"]), store_ref(sys, o["to"], ptr_key(optr, "to")),
                            duration(o, "every", 600, optr), optr};
    }
    if (s.contains("checkpoints")) {
      const json& c = s["checkpoints"];
      confine(out.workdir, c["path"], ptr_key(ptr_key(ptr, "checkpoints"), "path"));
      out.checkpoints = Checkpoints{pod_path(out.workdir, c["path"]), get_or<std::string>(c, "pattern", "*"),
                                    get_or<std::string>(c, "resumeFlag", ""), ptr_key(ptr, "checkpoints")};
    }
    out.labels = string_map(s, "labels");
    out.annotations = string_map(s, "annotations");
    out.security = pod_security(s, out.ptr);
    // A generated image runs as uid 1000: it must own the folders the entry script writes.
    if (auto b = builds_.find(out.name); s.contains("build") && b != builds_.end() && b->second.generated()) {
      std::set<std::string> dirs;
      for (const auto& in : out.inputs) dirs.insert(in.to);
      if (out.outputs) dirs.insert(out.outputs->path);
      if (!out.heartbeat.file.empty()) dirs.insert(std::filesystem::path(out.heartbeat.file).parent_path().generic_string());
      for (const auto& d : dirs)
        if (!d.empty() && d != "/" && !d.starts_with("/tmp") && d != out.workdir && !d.starts_with(out.workdir + "/"))
          b->second.writable.push_back(d);
    }
    return out;
  }

  /// `security:` of a step, cluster or service (`obj`, at `ptr`).
  PodSecurity pod_security(const json& obj, const std::string& ptr) {
    PodSecurity out;
    if (!obj.contains("security")) return out;
    const json& sec = obj["security"];
    out.ptr = ptr_key(ptr, "security");
    const std::string level = get_or<std::string>(sec, "level", "restricted");
    if (level == "baseline") out.level = PodSecurityLevel::kBaseline;
    if (level == "privileged") out.level = PodSecurityLevel::kPrivileged;
    out.reason = get_or<std::string>(sec, "reason", "");
    if (sec.contains("runAsUser")) out.run_as = sec["runAsUser"].get<int>();
    if (!out.restricted() && out.reason.empty())
      doc_.error(diags_, ptr_key(out.ptr, "level"),
                 fmt::format("security level '{}' needs a 'reason': say why the pods cannot run under 'restricted'; it is "
                             "written into the output's README",
                             level),
                 Anchor::key);
    if (!out.restricted() && out.run_as)
      doc_.error(diags_, ptr_key(out.ptr, "runAsUser"),
                 fmt::format("'runAsUser' applies at level 'restricted'; at '{}' the pods run as the image's own user: "
                             "remove it",
                             level),
                 Anchor::key);
    if (out.restricted() && !out.reason.empty())
      doc_.error(diags_, ptr_key(out.ptr, "reason"),
                 "'reason' explains an exception to 'restricted'; at level 'restricted' there is none: remove it",
                 Anchor::key);
    return out;
  }

  /// The one key that says what the step runs; both of two, or none, is reported here, where the
  /// diagnostic can point at both keys.
  StepKind kind(const System& sys, const json& s, const std::string& ptr, const Step& step) {
    std::vector<std::string_view> set;
    for (std::string_view name : alternative_names<StepKind>::value)
      if (s.contains(std::string(name))) set.push_back(name);
    if (set.size() > 1) {
      doc_.error(diags_, ptr_key(ptr, std::string(set[1])),
                 fmt::format("step '{}' sets both '{}' and '{}'; keep one", step.name, set[0], set[1]), Anchor::key,
                 {doc_.note(ptr_key(ptr, std::string(set[0])), fmt::format("'{}' is set here", set[0]), Anchor::key)});
    } else if (set.empty()) {
      doc_.error(diags_, ptr,
                 fmt::format("step '{}' says nothing to run; add 'torchrun: {{script: ...}}', 'command: [...]', "
                             "'datagen: {{...}}' or 'xgboost: {{...}}'",
                             step.name));
      return Command{};
    }
    const json& k = s[std::string(set.front())];
    const std::string kptr = ptr_key(ptr, std::string(set.front()));
    return make_alternative<StepKind>(
        set.front(),
        [&](std::type_identity<Torchrun>) {
          Torchrun tr;
          tr.script = pod_path(step.workdir, k["script"]);
          if (k.contains("args")) tr.args = string_list(k["args"]);
          tr.port = integer(k, "port", 29500, kptr);
          return tr;
        },
        [&](std::type_identity<Command>) {
          Command c{string_list(k)};
          if (c.argv.empty()) doc_.error(diags_, kptr, "'command' is empty; name the program to run");
          return c;
        },
        [&](std::type_identity<Datagen>) { return datagen(sys, k, kptr, step.nodes); },
        [&](std::type_identity<XGBoost>) { return xgboost(sys, k, kptr, step.gpus); });
  }

  /// "<store>:/path" for trainrt steps: the store must exist; GCS stores appear under /mnt/stores.
  StoreLoc store_loc(const System& sys, const std::string& text, const std::string& ptr) {
    StoreLoc loc;
    loc.ptr = ptr;
    const Store* st = split_store_ref(sys, text, ptr, loc.store, loc.path);
    if (st && st->kind != Store::Kind::gcs) {
      doc_.error(diags_, ptr,
                 fmt::format("store '{}' is an S3 bucket; trainrt steps read and write GCS stores, which their pods "
                             "mount",
                             loc.store));
    }
    loc.pod_path = pod_path("/", fmt::format("{}/{}{}", kStoreMountRoot, loc.store, loc.path));
    return loc;
  }

  Datagen datagen(const System& sys, const json& g, const std::string& ptr, int nodes) {
    Datagen d;
    d.rows = integer<long long>(g, "rows", 0, ptr);
    d.size = get_or<std::string>(g, "size", "");
    if (g.contains("rows") == g.contains("size"))
      doc_.error(diags_, ptr, "datagen needs exactly one of 'rows' and 'size'", Anchor::key);
    d.features = integer(g, "features", 0, ptr);
    const std::optional<double> bytes = d.size.empty() ? std::nullopt : parse_byte_size(d.size);
    if (!d.size.empty() && !bytes)
      doc_.error(diags_, ptr_key(ptr, "size"),
                 fmt::format("'{}' is not a size of at most 2^63 bytes such as 6TB, 500GB or 64GiB", d.size));
    else if (bytes)
      d.rows = static_cast<long long>(std::floor(*bytes / ((d.features + 1) * 4.0)));
    if (bytes && d.rows < 1)
      doc_.error(diags_, ptr_key(ptr, "size"),
                 fmt::format("{} holds less than one row of {} float32 features and a label", d.size, d.features));
    d.task = get_or<std::string>(g, "task", "classification");
    d.informative = integer(g, "informative", std::min(2, d.features), ptr);
    d.redundant = integer(g, "redundant", d.task == "classification" ? std::min(2, d.features - d.informative) : 0, ptr);
    d.repeated = integer(g, "repeated", 0, ptr);
    d.classes = integer(g, "classes", 2, ptr);
    d.clusters_per_class = integer(g, "clustersPerClass", 2, ptr);
    d.class_sep = get_or(g, "classSep", 1.0);
    d.flip_y = get_or(g, "flipY", 0.01);
    d.hypercube = get_or(g, "hypercube", true);
    if (g.contains("weights")) d.weights = g["weights"].get<std::vector<double>>();
    d.shards = integer(g, "shards", nodes, ptr);
    d.seed = integer<long long>(g, "seed", 0, ptr);
    d.format = get_or<std::string>(g, "format", "native");
    d.to = store_loc(sys, g["to"], ptr_key(ptr, "to"));
    return d;
  }

  XGBoost xgboost(const System& sys, const json& x, const std::string& ptr, int gpus) {
    XGBoost out;
    out.from = store_loc(sys, x["from"], ptr_key(ptr, "from"));
    out.to = store_loc(sys, x["to"], ptr_key(ptr, "to"));
    out.rounds = integer(x, "rounds", 0, ptr);
    out.checkpoint_every = integer(x, "checkpointEvery", 100, ptr);
    out.params = string_map(x, "params");
    out.params.emplace("tree_method", "hist");
    if (gpus > 0) out.params.emplace("device", "cuda");
    return out;
  }

  /// An XGBoost step that reads a table a datagen step of the system writes learns what the table
  /// holds: its objective and eval metric default to the table's task (binary:logistic and logloss,
  /// multi:softprob with num_class and mlogloss, reg:squarederror and rmse); an objective of another
  /// family is an error.
  void objectives_from_tables(std::vector<Step>& steps) {
    const auto same = [](const StoreLoc& a, const StoreLoc& b) {
      auto trim = [](std::string p) {
        while (p.size() > 1 && p.ends_with("/")) p.pop_back();
        return p;
      };
      return !a.store.empty() && a.store == b.store && trim(a.path) == trim(b.path);
    };
    for (auto& st : steps) {
      auto* x = std::get_if<XGBoost>(&st.run);
      if (!x) continue;
      const Step* maker = nullptr;
      for (const auto& other : steps)
        if (const auto* g = other.as<Datagen>(); g && same(g->to, x->from)) maker = &other;
      if (!maker) continue;
      const Datagen& g = *maker->as<Datagen>();
      const bool regression = g.task == "regression", binary = !regression && g.classes == 2;
      const std::string table = regression ? "a regression table"
                                : binary   ? "a binary classification table"
                                           : fmt::format("a {}-class classification table", g.classes);
      const std::string objective = regression ? "reg:squarederror" : binary ? "binary:logistic" : "multi:softprob";
      const std::string optr = ptr_key(ptr_key(x->from.ptr.substr(0, x->from.ptr.rfind('/')), "params"), "objective");
      const auto note = doc_.note(ptr_key(maker->ptr, "datagen"), fmt::format("step '{}' writes the table here", maker->name));
      if (auto it = x->params.find("objective"); it != x->params.end()) {
        const std::string& given = it->second;
        const bool fits = regression ? given.starts_with("reg:") && given != "reg:logistic"
                          : binary   ? given.starts_with("binary:") || given == "reg:logistic"
                                     : given.starts_with("multi:");
        if (!fits)
          doc_.error(diags_, optr,
                     fmt::format("objective '{}' does not fit '{}:{}', {} written by step '{}'; use '{}' or remove "
                                 "'objective' (trainc sets it from the table)",
                                 given, x->from.store, x->from.path, table, maker->name, objective),
                     Anchor::value, {note});
      }
      x->params.emplace("objective", objective);
      if (!regression && !binary) {
        const std::string classes = std::to_string(g.classes);
        auto [it, fresh] = x->params.emplace("num_class", classes);
        if (!fresh && it->second != classes)
          doc_.error(diags_, ptr_key(optr.substr(0, optr.rfind('/')), "num_class"),
                     fmt::format("num_class {} does not match the {} classes of the table step '{}' writes; remove "
                                 "'num_class' (trainc sets it from the table)",
                                 it->second, g.classes, maker->name),
                     Anchor::value, {note});
      }
      x->params.emplace("eval_metric", regression ? "rmse" : binary ? "logloss" : "mlogloss");
    }
  }

  /// A trainrt step's pods mount every GCS store it names, once.
  void add_store_mounts(const System& sys, Step& step) {
    for (const StoreLoc* loc : store_locs(step.run)) {
      const Store* st = sys.store(loc->store);
      if (!st || st->kind != Store::Kind::gcs) continue;
      bool present = std::any_of(step.mounts.begin(), step.mounts.end(), [&](const Mount& m) { return m.store == loc->store; });
      if (present) continue;
      step.mounts.push_back(Mount{loc->store, fmt::format("{}/{}", kStoreMountRoot, loc->store), st->bucket, st->prefix,
                                  false, loc->ptr});
    }
  }

  /// Reports a pod path a step writes to or mounts over that leaves its workdir or names a system folder.
  void confine(const std::string& workdir, const std::string& written, const std::string& ptr) {
    if (std::string why = unconfined(workdir, written); !why.empty()) doc_.error(diags_, ptr, why);
  }

  Mount mount(const System& sys, const json& m, const std::string& ptr) {
    Mount out;
    out.ptr = ptr;
    out.store = m["store"];
    confine("/", m["path"], ptr_key(ptr, "path"));
    out.path = pod_path("/", m["path"]);
    const Store* st = sys.store(out.store);
    if (!st) {
      unknown_store(sys, out.store, ptr_key(ptr, "store"), "");
      return out;
    }
    if (st->kind != Store::Kind::gcs) {
      doc_.error(diags_, ptr_key(ptr, "store"),
                 fmt::format("store '{}' is an S3 bucket, which cannot be mounted; sync it with 'inputs' and 'outputs'",
                             out.store));
      return out;
    }
    out.bucket = st->bucket;
    out.only_dir = st->prefix;
    out.read_only = get_or(m, "readOnly", st->read_only);
    return out;
  }

  void check_step_names(const std::vector<Step>& steps) {
    std::map<std::string, const Step*> seen;
    std::vector<std::string> names;
    for (const auto& st : steps) {
      auto [it, fresh] = seen.emplace(st.name, &st);
      if (!fresh) {
        doc_.error(diags_, ptr_key(st.ptr, "name"),
                   fmt::format("duplicate step name '{}'; step names must be unique", st.name), Anchor::value,
                   {doc_.note(ptr_key(it->second->ptr, "name"), "first used here")});
      } else {
        names.push_back(st.name);
      }
    }
    for (const auto& st : steps) {
      for (size_t i = 0; i < st.needs.size(); ++i) {
        std::string nptr = ptr_index(ptr_key(st.ptr, "needs"), i);
        if (st.needs[i] == st.name)
          doc_.error(diags_, nptr, fmt::format("step '{}' cannot need itself", st.name));
        else if (!seen.count(st.needs[i]) && !pruned("step", st.needs[i]))
          doc_.error(diags_, nptr, fmt::format("unknown step '{}' in needs{}", st.needs[i], did_you_mean(st.needs[i], names)));
      }
    }
  }

  /// Kahn's algorithm, taking ready steps in spec order; reports one error per cycle found.
  std::vector<Step> dependency_order(std::vector<Step> steps) {
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
          doc_.error(diags_, ptr_key(steps[*seen].ptr, "needs"),
                     fmt::format("steps form a cycle through needs: {}; remove one of these needs", path));
          for (auto it = seen; it != trail.end(); ++it) done[*it] = true;
          break;
        }
        trail.push_back(next);
      }
    }
    return order;
  }

  /// The names of `kind` the spec declares: those lowered and those pruned, in name order.
  std::vector<std::string> declared(const auto& lowered, const std::string& kind) const {
    std::vector<std::string> names = keys_of(lowered);
    for (const auto& [k, name] : pruned_)
      if (k == kind) names.push_back(name);
    std::sort(names.begin(), names.end());
    return names;
  }

  /// Whether the `kind` ("pools", "storage", "clusters", "services", "step") named `name` was pruned.
  bool pruned(const std::string& kind, const std::string& name) const { return pruned_.count({kind, name}) > 0; }

  /// An entity pruned after a schema error is not lowered, but the pool, cluster and steps it names
  /// are still looked up, so that a wrong name is reported together with the schema error.
  void references(const System& sys, const json& e, const std::string& ptr) {
    if (!e.is_object()) return;
    auto name_at = [&](const std::string& key) -> const std::string* {
      const std::string kptr = ptr_key(ptr, key);
      return e.contains(key) && e[key].is_string() && !doc_.invalid_at(kptr) ? e[key].get_ptr<const std::string*>()
                                                                             : nullptr;
    };
    if (const auto* pool = name_at("pool")) pool_ref(sys, *pool, ptr_key(ptr, "pool"));
    if (const auto* cluster = name_at("cluster"); cluster && ptr.starts_with("/pipeline/"))
      cluster_ref(sys, *cluster, ptr_key(ptr, "cluster"));
    if (!ptr.starts_with("/pipeline/")) return;
    // The stores a step mounts, syncs from and writes to, and its trainrt tables' stores.
    const auto store_at = [&](const json& parent, const std::string& parent_ptr, const std::string& key, bool whole) {
      const std::string kptr = ptr_key(parent_ptr, key);
      if (!parent.is_object() || !parent.contains(key) || !parent[key].is_string() || doc_.invalid_at(kptr)) return;
      const std::string text = parent[key];
      std::string store = whole ? text : text.substr(0, text.find(':'));
      if (!sys.store(store)) unknown_store(sys, store, kptr, whole ? "" : text);
    };
    struct ListRef {
      const char *list, *key;
      bool whole;  ///< the value is a store name, not "<store>:/path"
    };
    for (const auto& [list, key, whole] : {ListRef{"mounts", "store", true}, ListRef{"inputs", "from", false}})
      if (e.contains(list) && e[list].is_array())
        for (size_t i = 0; i < e[list].size(); ++i) store_at(e[list][i], ptr_index(ptr_key(ptr, list), i), key, whole);
    if (e.contains("outputs")) store_at(e["outputs"], ptr_key(ptr, "outputs"), "to", false);
    if (e.contains("datagen")) store_at(e["datagen"], ptr_key(ptr, "datagen"), "to", false);
    if (e.contains("xgboost"))
      for (const char* key : {"from", "to"}) store_at(e["xgboost"], ptr_key(ptr, "xgboost"), key, false);
    if (!e.contains("needs") || !e["needs"].is_array()) return;
    for (size_t i = 0; i < e["needs"].size(); ++i) {
      const std::string nptr = ptr_index(ptr_key(ptr, "needs"), i);
      const json& n = e["needs"][i];
      if (!n.is_string() || doc_.invalid_at(nptr)) continue;
      if (std::find(step_names_.begin(), step_names_.end(), n.get<std::string>()) == step_names_.end())
        doc_.error(diags_, nptr, fmt::format("unknown step '{}' in needs{}", n.get<std::string>(),
                                             did_you_mean(n.get<std::string>(), step_names_)));
    }
  }

  const Document& doc_;
  Diagnostics& diags_;
  std::map<std::string, Build> builds_;
  const json& root_;
  std::set<std::pair<std::string, std::string>> pruned_;  ///< (kind, name) of pruned entities
  std::vector<std::string> step_names_;                   ///< every step's name, pruned ones too
};

/// Leaves out of `sys` the entities at the pointers in `out`, and, until nothing changes, every
/// entity that refers to one left out (a step on a pool, a cluster's workers, a step's needs).
void leave_out(System& sys, std::set<std::string> out, const json& root) {
  const auto gone = [&](std::string_view kind, const std::string& name) {
    return !name.empty() && out.count(ptr_key(kind == "pools" ? "/cluster/pools" : "/" + std::string(kind), name));
  };
  std::map<std::string, std::string> step_ptr;  // every step's pointer by name, left-out ones too
  if (root.contains("pipeline") && root["pipeline"].is_array())
    for (size_t i = 0; i < root["pipeline"].size(); ++i) {
      const json& st = root["pipeline"][i];
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
      if (const auto* t = svc.as<Triton>()) bad |= gone("storage", t->repository.store);
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

}  // namespace

std::optional<System> lower(const Document& doc, Diagnostics& diags) {
  const size_t before = diags.reported().size();
  System sys = Lowerer(doc, diags).run();
  if (!doc.pruned.empty() || diags.has_errors_since(before)) return std::nullopt;
  return sys;
}

std::optional<System> lower_for_checks(const Document& doc, Diagnostics& diags) {
  const size_t before = diags.reported().size();
  System sys = Lowerer(doc, diags).run();
  std::set<std::string> out = doc.pruned;
  const auto& all = diags.reported();
  for (size_t i = before; i < all.size(); ++i) {
    if (all[i].severity != Severity::error) continue;
    const std::string entity = entity_of(all[i].path);
    if (entity.empty()) return std::nullopt;  // a top-level setting the rest may depend on
    // A wrong name in `needs` changes only the order steps start in: the step is still judged.
    if (entity.starts_with("/pipeline/") && all[i].path.starts_with(entity + "/needs/")) continue;
    out.insert(entity);
  }
  if (diags.has_errors_since(before) || !out.empty()) leave_out(sys, std::move(out), doc.root);
  return sys;
}

}  // namespace trainc
