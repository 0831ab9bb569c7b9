#include "model/lowerer.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/spelling.h"
#include "model/checkpoints.h"

namespace trainc::lowering {

namespace {

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

/// What to write instead of a bucket URL: the reference through the store holding the bucket,
/// else what keeps the stores of that bucket from holding the path, else a store to declare.
std::string bucket_url_hint(const System& sys, const BucketUrl& url) {
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

}  // namespace

Store Lowerer::store(const System& sys, const std::string& name, const json& s) {
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

void Lowerer::default_versioning(System& sys) {
  for (auto& [name, st] : sys.stores) {
    if (st.kind != Store::Kind::gcs || root_["storage"][name]["gcs"].contains("versioning")) continue;
    for (const auto& step : sys.steps)
      if (const Mount* m = checkpoint_mount(step); m && m->store == name) st.versioning = true;
  }
}

const Store* Lowerer::split_store_ref(const System& sys, const std::string& text, const std::string& ptr, std::string& store,
                                      std::string& path) {
  auto colon = text.find(':');
  store = text.substr(0, colon);
  path = text.substr(colon + 1);
  const Store* s = sys.store(store);
  if (!s) unknown_store(sys, store, ptr, text);
  return s;
}

void Lowerer::unknown_store(const System& sys, const std::string& store, const std::string& ptr, const std::string& text) {
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

namespace {

/// Whether the pod paths `a` and `b` overlap: one is the other or holds it.
bool overlaps(std::string_view a, std::string_view b) {
  auto within = [](std::string_view in, std::string_view out) {
    return in == out || out == "/" || (in.starts_with(out) && in.size() > out.size() && in[out.size()] == '/');
  };
  return within(a, b) || within(b, a);
}

/// A path to mount store `store` at that overlaps none of the step's mounts.
std::string free_mount_path(const std::string& store, const std::vector<std::pair<std::string, std::string>>& mounted) {
  auto free = [&](const std::string& p) {
    return std::none_of(mounted.begin(), mounted.end(), [&](const auto& m) { return overlaps(p, m.second); });
  };
  for (const std::string& p : {std::string("/data"), "/mnt/" + store})
    if (free(p)) return p;
  for (int i = 2;; ++i)
    if (const std::string p = fmt::format("/mnt/{}-{}", store, i); free(p)) return p;
}

}  // namespace

StoreRef Lowerer::store_ref(const System& sys, const std::string& text, const std::string& ptr,
                            const std::vector<std::pair<std::string, std::string>>& mounted) {
  StoreRef ref;
  ref.ptr = ptr;
  const Store* s = split_store_ref(sys, text, ptr, ref.store, ref.path);
  if (!s) return ref;
  if (s->kind == Store::Kind::gcs) {
    const auto here = std::find_if(mounted.begin(), mounted.end(), [&](const auto& m) { return m.first == ref.store; });
    doc_.error(diags_, ptr,
               here != mounted.end()
                   ? fmt::format("store '{}' is a GCS bucket, which steps reach through 'mounts' (GCS FUSE), not by "
                                 "syncing; the step mounts it at '{}' already: read and write there (checkpoints "
                                 "under '{}' need no 'outputs')",
                                 ref.store, here->second, here->second)
                   : fmt::format("store '{}' is a GCS bucket, which steps reach through 'mounts' (GCS FUSE), not by "
                                 "syncing; mount it with mounts: [{{store: {}, path: {}}}]",
                                 ref.store, ref.store, free_mount_path(ref.store, mounted)));
    return ref;
  }
  ref.url = fmt::format("s3://{}{}{}", s->bucket, s->prefix.empty() ? "" : "/" + s->prefix, ref.path);
  return ref;
}

StoreRef Lowerer::gcs_ref(const System& sys, const std::string& text, const std::string& ptr, std::string_view who) {
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

StoreLoc Lowerer::store_loc(const System& sys, const std::string& text, const std::string& ptr) {
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

Mount Lowerer::mount(const System& sys, const json& m, const std::string& ptr) {
  Mount out;
  out.ptr = ptr;
  out.store = m["store"];
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

}  // namespace trainc::lowering
