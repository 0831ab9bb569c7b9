#include "model/build_context.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "base/data_path.h"
#include "base/sha256.h"
#include "base/embedded.h"
#include "base/spelling.h"

namespace fs = std::filesystem;

extern char** environ;

namespace trainc {
namespace {

struct Walk {
  std::vector<std::pair<std::string, fs::path>> files;  ///< context-relative name, path on disk
  unsigned long long bytes = 0;
  fs::path root;  ///< the context, resolved: no symbolic link may lead out of it
};

/// Whether `p` (resolved) is `root` or inside it.
bool within(const fs::path& p, const fs::path& root) {
  const fs::path rel = p.lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
}

/// Adds `path` (a file, or a folder walked recursively) under the context-relative `name`. Skips
/// .git and folders trainc wrote (they hold .trainc-manifest): output must not feed its own input.
/// Symbolic links are digested as their target text (docker copies them as links) and must not
/// lead out of the context, where docker cannot follow.
std::optional<std::string> collect(const fs::path& path, const std::string& name, Walk& walk) {
  std::error_code ec;
  auto add = [&](const fs::path& p, const std::string& rel) -> std::optional<std::string> {
    if (fs::is_symlink(fs::symlink_status(p, ec)) && !within(fs::weakly_canonical(p, ec), walk.root))
      return fmt::format("'{}' is a symbolic link to '{}', outside the build context, which docker cannot follow; "
                         "copy the file into the context",
                         rel, fs::read_symlink(p, ec).generic_string());
    if (walk.files.size() >= kMaxContextFiles)
      return fmt::format("the build reads more than {} files; narrow 'context' or 'copy', or set 'tag'", kMaxContextFiles);
    auto st = fs::symlink_status(p, ec);
    // Reading a FIFO would wait for a writer forever; sockets and devices are no files to copy.
    if (!fs::is_regular_file(st) && !fs::is_symlink(st))
      return fmt::format("'{}' is {}, not a file docker can copy; move it out of the build context", rel,
                         fs::is_fifo(st) ? "a FIFO (named pipe)" : fs::is_socket(st) ? "a socket" : "a special file");
    if (fs::is_regular_file(st)) walk.bytes += fs::file_size(p, ec);
    if (walk.bytes > kMaxContextBytes)
      return fmt::format("the build reads more than {} MiB; narrow 'context' or 'copy', or set 'tag'", kMaxContextBytes >> 20);
    walk.files.emplace_back(rel, p);
    return std::nullopt;
  };
  // A folder on the way may be a symbolic link out of the context: docker cannot follow it, and
  // the files behind it must not count towards the tag.
  if (path != walk.root && !within(fs::weakly_canonical(path.parent_path(), ec), walk.root))
    return fmt::format("'{}' leads out of the build context through a symbolic link, which docker cannot follow; "
                       "copy the files into the context",
                       name);
  auto st = fs::symlink_status(path, ec);
  if (!fs::is_directory(st)) return add(path, name);  // a file, or a link (which add() checks)
  if (fs::exists(path / ".trainc-manifest", ec)) return std::nullopt;
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      if (p.filename() == ".git" || fs::exists(p / ".trainc-manifest", ec)) it.disable_recursion_pending();
      continue;
    }
    std::string rel = (fs::path(name) / fs::relative(p, path, ec)).lexically_normal().generic_string();
    if (auto err = add(p, rel)) return err;
  }
  if (ec) return fmt::format("cannot read '{}': {}", path.generic_string(), ec.message());
  return std::nullopt;
}

std::optional<std::string> digest_files(Walk& walk, Sha256& sha) {
  std::sort(walk.files.begin(), walk.files.end());
  walk.files.erase(std::unique(walk.files.begin(), walk.files.end()), walk.files.end());
  std::error_code ec;
  for (const auto& [rel, p] : walk.files) {
    sha.field(rel);
    if (fs::is_symlink(fs::symlink_status(p, ec))) {
      sha.field("symlink");
      sha.field(fs::read_symlink(p, ec).generic_string());
      continue;
    }
    std::ifstream in(p, std::ios::binary);
    if (!in) return fmt::format("cannot read '{}'", p.generic_string());
    // The executable bit is part of what docker copies.
    const bool exec = (fs::status(p, ec).permissions() & fs::perms::owner_exec) != fs::perms::none;
    sha.field(exec ? "exec-file" : "file");
    sha.update(fmt::format("{}:", fs::file_size(p, ec)));
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) sha.update(std::string_view(buf, static_cast<size_t>(in.gcount())));
  }
  return std::nullopt;
}

/// The names in folder `dir`, as `prefix`/name: what a misspelled path is compared with.
std::vector<std::string> entries(const fs::path& dir, const fs::path& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator() && out.size() < 1000; it.increment(ec))
    out.push_back((prefix / it->path().filename()).generic_string());
  std::sort(out.begin(), out.end());
  return out;
}

/// The files git tracks under `dir`, relative to it; nullopt when `dir` is not in a git work tree
/// or git cannot be run. A CI checkout holds exactly these, so digesting only them keeps a
/// developer's untracked files (__pycache__, editor backups) from changing the tag.
std::optional<std::set<std::string>> tracked_files(const fs::path& dir) {
  // Close-on-exec: a git another thread starts meanwhile (driver.h's compile_many) must not hold
  // this pipe open.
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  const std::string where = dir.string();
  // No fsmonitor: a repository's config must not make trainc run a command of its choosing.
  std::vector<char*> argv{const_cast<char*>("git"),      const_cast<char*>("-c"),
                          const_cast<char*>("core.fsmonitor=false"), const_cast<char*>("-C"),
                          const_cast<char*>(where.c_str()), const_cast<char*>("ls-files"),
                          const_cast<char*>("-z"),       nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "git", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  if (rc == 0) {
    char buf[1 << 16];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  if (rc != 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  std::set<std::string> files;
  for (size_t start = 0, end; start < out.size(); start = end + 1) {
    end = out.find('\0', start);
    if (end == std::string::npos) end = out.size();
    if (end > start) files.insert(out.substr(start, end - start));
  }
  return files;
}

}  // namespace

bool stays_inside(const std::string& rel) {
  fs::path p(rel);
  if (p.is_absolute() || rel.empty()) return false;
  fs::path n = p.lexically_normal();
  return n.empty() || *n.begin() != "..";
}

std::variant<std::string, BuildInputError> build_tag(const fs::path& spec_dir, const Build& b,
                                                     std::string_view template_text) {
  fs::path context = (spec_dir / b.context).lexically_normal();
  if (context.has_filename() == false && context.has_parent_path()) context = context.parent_path();
  std::error_code ec;
  if (!fs::is_directory(context, ec))
    return BuildInputError{ptr_key(b.ptr, "context"),
                           fmt::format("the build context '{}' is not a folder", context.lexically_normal().generic_string())};
  Walk walk;
  walk.root = fs::weakly_canonical(context, ec);
  if (!within(walk.root, fs::weakly_canonical(spec_dir, ec)))
    return BuildInputError{ptr_key(b.ptr, "context"),
                           fmt::format("the build context '{}' leads out of the spec's folder (through a symbolic link)",
                                       context.generic_string())};
  Sha256 sha;
  sha.field("trainc-build-v1");
  sha.field(b.dockerfile);
  sha.field(b.base);
  sha.field(b.requirements);
  for (const auto& c : b.copy) sha.field(c);
  sha.field(b.workdir);
  for (const auto& w : b.writable) sha.field(w);
  sha.field(template_text);
  auto need = [&](const std::string& rel, const std::string& ptr, const char* what) -> std::optional<BuildInputError> {
    if (!fs::exists(fs::symlink_status(context / rel, ec)))
      return BuildInputError{ptr, fmt::format("{} '{}' is not in the build context '{}'{}", what, rel, context.generic_string(),
                                              did_you_mean(rel, entries(context / fs::path(rel).parent_path(),
                                                                        fs::path(rel).parent_path())))};
    return std::nullopt;
  };
  if (!b.generated()) {
    if (auto e = need(b.dockerfile, ptr_key(b.ptr, "dockerfile"), "the Dockerfile")) return *e;
    // The user's Dockerfile may COPY anything: the whole context counts.
    if (auto err = collect(walk.root, ".", walk)) return BuildInputError{ptr_key(b.ptr, "context"), *err};
  } else {
    if (!b.requirements.empty()) {
      if (auto e = need(b.requirements, ptr_key(b.ptr, "requirements"), "the requirements file")) return *e;
      if (auto err = collect(walk.root / b.requirements, fs::path(b.requirements).lexically_normal().generic_string(), walk))
        return BuildInputError{ptr_key(b.ptr, "requirements"), *err};
    }
    for (size_t i = 0; i < b.copy.size(); ++i) {
      const std::string ptr = ptr_index(ptr_key(b.ptr, "copy"), i);
      if (auto e = need(b.copy[i], ptr, "")) {
        e->message = fmt::format("'{}' is not in the build context '{}'{}", b.copy[i], context.generic_string(),
                                 did_you_mean(b.copy[i], entries(context / fs::path(b.copy[i]).parent_path(),
                                                                 fs::path(b.copy[i]).parent_path())));
        return *e;
      }
      if (auto err = collect(walk.root / b.copy[i], fs::path(b.copy[i]).lexically_normal().generic_string(), walk))
        return BuildInputError{ptr, *err};
    }
  }
  // In a git work tree, only tracked files count (what a CI checkout builds from); a file the build
  // names itself but git does not track yet still counts, so that it is not silently left out.
  if (auto tracked = tracked_files(walk.root); tracked && !tracked->empty()) {
    std::set<std::string> named{b.dockerfile, b.requirements};
    for (const auto& c : b.copy) named.insert(fs::path(c).lexically_normal().generic_string());
    std::erase_if(walk.files, [&](const auto& f) { return !tracked->count(f.first) && !named.count(f.first); });
  }
  if (auto err = digest_files(walk, sha)) return BuildInputError{ptr_key(b.ptr, "context"), *err};
  return "c-" + sha.hex().substr(0, 16);
}

DockerfileBase dockerfile_base(const fs::path& spec_dir, const Build& b) {
  DockerfileBase out;
  out.path = (fs::path(b.context) / b.dockerfile).lexically_normal().generic_string();
  const fs::path context = (spec_dir / b.context).lexically_normal(), file = context / b.dockerfile;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) return out;
  // Not a FIFO (reading it would wait for a writer) nor a link out of the context.
  if (!fs::is_regular_file(fs::status(file, ec)) ||
      !within(fs::weakly_canonical(file, ec), fs::weakly_canonical(context, ec))) {
    out.problem = "is not a file in the build context";
    return out;
  }
  if (const auto size = fs::file_size(file, ec); !ec && size > (1u << 20)) {
    out.problem = "is larger than 1 MiB";
    return out;
  }
  std::ifstream in(file);
  if (!in) {
    out.problem = "cannot be opened";
    return out;
  }
  std::map<std::string, std::string> args, stages;  // ARG defaults before the first FROM; stage -> image
  bool from_seen = false;
  std::string line, joined;
  const auto lower = [](std::string w) {
    for (auto& ch : w) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return w;
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\\') {  // an instruction goes on past a line that ends in a backslash
      joined += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    joined += line;
    std::vector<std::string> words;
    for (size_t at = 0; (at = joined.find_first_not_of(" \t\r", at)) != std::string::npos;) {
      const size_t end = std::min(joined.find_first_of(" \t\r", at), joined.size());
      words.push_back(joined.substr(at, end - at));
      at = end;
    }
    joined.clear();
    if (words.empty() || words[0].starts_with("#")) continue;
    const std::string op = lower(words[0]);
    if (op == "arg" && !from_seen) {
      for (size_t i = 1; i < words.size(); ++i)
        if (const size_t eq = words[i].find('='); eq != std::string::npos) {
          std::string v = words[i].substr(eq + 1);
          if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
          args[words[i].substr(0, eq)] = v;
        }
    } else if (op == "from") {
      from_seen = true;
      size_t i = 1;
      while (i < words.size() && words[i].starts_with("--")) ++i;  // --platform=...
      if (i == words.size()) continue;
      std::string image = words[i];
      for (const auto& [name, value] : args)
        for (const std::string& ref : {"${" + name + "}", "$" + name})
          for (size_t at = 0; (at = image.find(ref, at)) != std::string::npos;) {
            const size_t end = at + ref.size();
            if (ref[1] != '{' && end < image.size() && (std::isalnum(static_cast<unsigned char>(image[end])) || image[end] == '_')) {
              at = end;  // $VER is not $VERSION
              continue;
            }
            image.replace(at, ref.size(), value);
            at += value.size();
          }
      if (auto it = stages.find(lower(image)); it != stages.end()) image = it->second;
      if (i + 2 < words.size() && lower(words[i + 1]) == "as") stages[lower(words[i + 2])] = image;
      out.image = image;
    }
  }
  if (!from_seen) out.problem = "has no FROM line";
  else if (out.image.find('$') != std::string::npos) {
    out.problem = fmt::format("builds FROM '{}', a build argument with no default", out.image);
    out.image.clear();
  }
  return out;
}

void finish_builds(System& sys, const Document& doc, Diagnostics& diags) {
  auto spec_dir = std::filesystem::path(doc.file->name()).parent_path();
  if (spec_dir.empty()) spec_dir = ".";
  for (auto& [name, b] : sys.builds) {
    const EmbeddedFile* tmpl = b.generated() ? find_embedded(kImageDockerfileTemplate) : nullptr;
    auto tag = build_tag(spec_dir, b, tmpl ? tmpl->data : std::string_view());
    if (auto* err = std::get_if<BuildInputError>(&tag)) {
      doc.error(diags, err->ptr, err->message);
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

}  // namespace trainc
