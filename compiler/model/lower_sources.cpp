// A store folder's source (`source:` of a Triton service): a folder beside the spec, or a GCS
// folder, and files fetched from the web with a pinned SHA-256. A folder source is read here, at
// compile time: it must be inside the spec's folder and hold what the server needs, so that a
// misspelled model fails the compile instead of the health check an hour later.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include <fmt/format.h>

#include "base/spelling.h"
#include "model/build_context.h"
#include "model/lowerer.h"

namespace fs = std::filesystem;

namespace trainc::lowering {

namespace {

/// The folders in `dir`, by name: what a misspelled model is compared with.
std::vector<std::string> folders_in(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator() && out.size() < 1000;
       it.increment(ec))
    if (it->is_directory(ec)) out.push_back(it->path().filename().generic_string());
  std::sort(out.begin(), out.end());
  return out;
}

/// The first symbolic link or special file in `folder` (shown as `shown`), as the reason to refuse
/// it; nullopt when it holds only folders and regular files.
std::optional<std::string> link_in(const fs::path& folder, const std::string& shown) {
  std::error_code ec;
  std::vector<std::string> found;
  for (auto it = fs::recursive_directory_iterator(folder, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::file_status st = it->symlink_status(ec);
    if (fs::is_directory(st) || fs::is_regular_file(st)) continue;
    found.push_back((fs::path(shown) / it->path().lexically_relative(folder)).generic_string());
  }
  if (ec) return fmt::format("cannot read the folder '{}': {}", shown, ec.message());
  if (found.empty()) return std::nullopt;
  std::sort(found.begin(), found.end());
  const fs::path first = fs::path(folder) / fs::path(found[0]).lexically_relative(shown);
  const fs::file_status st = fs::symlink_status(first, ec);
  if (fs::is_symlink(st))
    return fmt::format("'{}' is a symbolic link (to '{}'): the scripts upload the folder to GCS, which holds no links, "
                       "and skip them; put the file itself there",
                       found[0], fs::read_symlink(first, ec).generic_string());
  return fmt::format("'{}' is {}, not a file the scripts can upload; move it out of the folder", found[0],
                     fs::is_fifo(st) ? "a FIFO (named pipe)" : fs::is_socket(st) ? "a socket" : "a special file");
}

}  // namespace

ContentSource Lowerer::content_source(const json& j, const std::string& ptr, const StoreRef& into,
                                      const std::vector<NeededObject>& needs, const std::string& needs_ptr) {
  ContentSource out;
  out.ptr = ptr;
  const std::string from = get_or<std::string>(j, "from", "");
  const std::string from_ptr = ptr_key(ptr, "from");
  fs::path spec_dir = fs::path(doc_.file->name()).parent_path();
  if (spec_dir.empty()) spec_dir = ".";
  std::set<std::string> fetched;
  if (j.contains("fetch")) {
    const json& f = j["fetch"];
    for (size_t i = 0; i < f.size(); ++i) {
      FetchedFile file{f[i]["url"], f[i]["sha256"], f[i]["to"], ptr_index(ptr_key(ptr, "fetch"), i)};
      if (!stays_inside(file.to))
        doc_.error(diags_, ptr_key(file.ptr, "to"),
                   fmt::format("'{}' leaves the repository: 'to' is a path relative to it, e.g. "
                               "densenet_onnx/1/model.onnx",
                               file.to));
      file.to = fs::path(file.to).lexically_normal().generic_string();
      if (!fetched.insert(file.to).second)
        doc_.error(diags_, ptr_key(file.ptr, "to"),
                   fmt::format("two files are fetched to '{}'; keep one", file.to));
      out.fetch.push_back(std::move(file));
    }
  }
  if (from.starts_with("gs://")) {
    out.gcs = from;
    while (out.gcs.size() > 5 && out.gcs.ends_with("/")) out.gcs.pop_back();
    if (!into.url.empty() && (out.gcs == into.url || out.gcs.starts_with(into.url + "/") ||
                              into.url.starts_with(out.gcs + "/")))
      doc_.error(diags_, from_ptr,
                 fmt::format("'{}' and the folder it fills, {}, overlap: the upload would copy the store onto "
                             "itself; name another folder, or leave 'source' out if the store is filled already",
                             out.gcs, into.url),
                 Anchor::value, {doc_.note(into.ptr, "the folder it fills")});
    return out;  // read when the scripts run: nothing else to check here
  }
  // Fetched files alone: each needed object must be one of them.
  fs::path folder;
  if (!from.empty()) {
    if (!stays_inside(from)) {
      doc_.error(diags_, from_ptr,
                 fmt::format("'{}' leaves the spec's folder: a folder source is a path relative to the spec's "
                             "folder and stays inside it (or write gs://bucket/path)",
                             from));
      return out;
    }
    out.folder = fs::path(from).lexically_normal().generic_string();
    while (out.folder.size() > 1 && out.folder.ends_with("/")) out.folder.pop_back();
    folder = spec_dir / out.folder;
    std::error_code ec;
    if (fs::is_directory(folder, ec)) {
      // The scripts upload what the folder holds: a symbolic link may not lead out of the spec's folder.
      const fs::path real = fs::weakly_canonical(folder, ec), root = fs::weakly_canonical(spec_dir, ec);
      const fs::path rel = real.lexically_relative(root);
      if (rel.empty() || *rel.begin() == "..") {
        doc_.error(diags_, from_ptr,
                   fmt::format("'{}' leads out of the spec's folder through a symbolic link; copy the files into "
                               "the spec's folder",
                               out.folder));
        return out;
      }
      // GCS holds no links: the upload skips them (--ignore-symlinks), so the model would lack what
      // one stands for, and a link followed could upload a file from anywhere on the machine.
      if (auto why = link_in(folder, out.folder)) {
        doc_.error(diags_, from_ptr, *why);
        return out;
      }
    } else {
      const fs::path parent = fs::path(out.folder).parent_path();
      std::vector<std::string> near;
      for (const auto& name : folders_in(spec_dir / parent)) near.push_back((parent / name).generic_string());
      doc_.error(diags_, from_ptr,
                 fmt::format("'{}' is not a folder in the spec's folder '{}'{}", out.folder,
                             spec_dir.lexically_normal().generic_string(), did_you_mean(out.folder, near)));
      return out;
    }
  }
  for (size_t i = 0; i < needs.size(); ++i) {
    const NeededObject& n = needs[i];
    std::error_code ec;
    if (fetched.count(n.path) || (!from.empty() && fs::is_regular_file(folder / n.path, ec))) continue;
    const std::string top = n.path.substr(0, n.path.find('/'));
    const std::string where = from.empty() ? "the fetched files" : fmt::format("the folder '{}'", out.folder);
    doc_.error(diags_, ptr_index(needs_ptr, i),
               fmt::format("{} is not in {}: the repository needs {}, which the scripts upload from there{}", n.what,
                           where, n.path, from.empty() ? "" : did_you_mean(top, folders_in(folder))),
               Anchor::value, {doc_.note(from.empty() ? ptr : from_ptr, "the repository's contents come from here")});
  }
  // A model's versions: a numbered folder under its own with a file in it, fetched or in the folder.
  auto numbered = [](std::string_view name) {
    return !name.empty() && name.find_first_not_of("0123456789") == std::string_view::npos;
  };
  for (size_t i = 0; i < needs.size(); ++i) {
    const NeededObject& n = needs[i];
    if (n.versions_in.empty()) continue;
    bool found = false;
    for (const auto& f : fetched) {
      const std::string_view rest = std::string_view(f).substr(std::min(f.size(), n.versions_in.size() + 1));
      const auto slash = rest.find('/');
      found = found || (f.starts_with(n.versions_in + "/") && slash != std::string_view::npos &&
                        numbered(rest.substr(0, slash)));
    }
    std::error_code ec;
    if (!found && !from.empty() && fs::is_directory(folder / n.versions_in, ec))
      for (const auto& e : fs::directory_iterator(folder / n.versions_in, ec)) {
        if (!e.is_directory(ec) || !numbered(e.path().filename().string())) continue;
        for (const auto& f : fs::recursive_directory_iterator(e.path(), ec)) found = found || f.is_regular_file(ec);
      }
    // A model missing its config is said above already.
    const bool config = fetched.count(n.path) || (!from.empty() && fs::is_regular_file(folder / n.path, ec));
    if (found || !config) continue;
    const std::string where = from.empty() ? "the fetched files" : fmt::format("the folder '{}'", out.folder);
    doc_.error(diags_, ptr_index(needs_ptr, i),
               fmt::format("{} has no version in {}: Triton loads a model from a numbered folder beside its "
                           "config.pbtxt ({}/1/model.onnx, for instance) and fails to load one without (\"at least "
                           "one version must be available under the version policy\"); add {}/1/ with the model's "
                           "file, in the folder or with `fetch`",
                           n.what, where, n.versions_in, n.versions_in),
               Anchor::value, {doc_.note(from.empty() ? ptr : from_ptr, "the repository's contents come from here")});
  }
  return out;
}

}  // namespace trainc::lowering
