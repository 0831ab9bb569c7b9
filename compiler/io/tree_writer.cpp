#include "io/tree_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "io/untrusted_folder.h"
#include "quoting/shell.h"

namespace fs = std::filesystem;

namespace trainc {
namespace {

/// Every entry of `dir` but folders, recursively; a symbolic link (to a folder too) is an entry.
std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_symlink() || !e.is_directory()) out.insert(e.path().lexically_relative(dir).generic_string());
  return out;
}

std::set<std::string> manifest_entries(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.insert(line);
  return out;
}

std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Refuses folders trainc did not make, and trainc folders holding files it did not write.
std::optional<std::string> check_ownership(const fs::path& dir) {
  auto manifest = read_file(dir / kManifestName);
  if (!manifest)
    return fmt::format("refusing to overwrite '{}': trainc did not create it (no {}); remove it or choose another "
                       "output folder",
                       dir.generic_string(), kManifestName);
  auto listed = manifest_entries(*manifest);
  for (const auto& f : files_in(dir))
    if (f != kManifestName && !listed.count(f))
      return fmt::format("refusing to overwrite '{}': it holds '{}', which trainc did not generate; move that file "
                         "elsewhere first",
                         dir.generic_string(), f);
  return std::nullopt;
}

/// diff -u of two texts (written to temporary files).
std::string run_diff(const std::string& old_label, const std::string& old_text, const std::string& new_label,
                     const std::string& new_text) {
  char old_tmpl[] = "/tmp/trainc-diff-XXXXXX", new_tmpl[] = "/tmp/trainc-diff-XXXXXX";
  int old_fd = mkstemp(old_tmpl);
  int new_fd = old_fd < 0 ? -1 : mkstemp(new_tmpl);
  if (new_fd < 0) {
    if (old_fd >= 0) close(old_fd), unlink(old_tmpl);
    return fmt::format("--- {}\n+++ {}\n(cannot create a temporary file to diff)\n", old_label, new_label);
  }
  (void)!write(old_fd, old_text.data(), old_text.size());
  (void)!write(new_fd, new_text.data(), new_text.size());
  close(old_fd);
  close(new_fd);
  std::string cmd = fmt::format("diff -u --label {} --label {} {} {}", sh_quote(old_label), sh_quote(new_label),
                                sh_quote(old_tmpl), sh_quote(new_tmpl));
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
  }
  unlink(old_tmpl);
  unlink(new_tmpl);
  return out;
}

constexpr std::string_view kSourcePrefix = "# source: ";

/// Test hook: with TRAINC_TEST_KILL_AT_STEP=N, the process kills itself (SIGKILL) before write step
/// N of this run (counted from 0 over every folder written: each file, then the swap into place,
/// then the removal of the previous tree), so that a test can stop a compile at every point of a
/// write, which a kill from outside cannot time reliably.
void write_step() {
  static const long kill_at = [] {
    const char* v = std::getenv("TRAINC_TEST_KILL_AT_STEP");
    return v && *v ? std::strtol(v, nullptr, 10) : -1L;
  }();
  static long step = 0;
  if (kill_at >= 0 && step++ == kill_at) ::raise(SIGKILL);
}

/// The PID in a temporary's name ".NAME.tmp-PID" or ".NAME.old-PID"; 0 when `file` is not one of `name`'s.
pid_t temporary_pid(const std::string& file, const std::string& name) {
  for (const char* kind : {".tmp-", ".old-"}) {
    const std::string prefix = "." + name + kind;
    if (!file.starts_with(prefix) || file.size() == prefix.size()) continue;
    const std::string digits = file.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) return 0;
    return static_cast<pid_t>(std::stol(digits));
  }
  return 0;
}

/// Temporaries an interrupted compile left beside `root/name`: a new tree it had not moved into
/// place (removed), or, from the fallback without an atomic exchange, the previous tree it had
/// moved aside (moved back when nothing took its place, else removed). Those of a running
/// process are left alone.
void clean_temporaries(const fs::path& root, const std::string& name) {
  std::error_code ec;
  std::vector<fs::path> stale_new, stale_old;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string file = e.path().filename().string();
    const pid_t pid = temporary_pid(file, name);
    const bool running = pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
    if (pid <= 0 || pid == getpid() || running) continue;
    (file.find(".old-") != std::string::npos ? stale_old : stale_new).push_back(e.path());
  }
  const fs::path target = root / name;
  for (const auto& old : stale_old) {
    std::error_code ignore;
    if (!fs::exists(target, ignore) && fs::exists(old / kManifestName, ignore))
      fs::rename(old, target, ignore);
    else
      fs::remove_all(old, ignore);
  }
  for (const auto& tmp : stale_new) {
    std::error_code ignore;
    fs::remove_all(tmp, ignore);
  }
}

}  // namespace

void add_manifest(OutputSink& files, const std::string& source) {
  std::string text = fmt::format("# {}\n", kGeneratedNotice);
  if (!source.empty()) text += fmt::format("{}{}\n", kSourcePrefix, source);
  text += "# the files trainc generated in this folder; it replaces the folder on compile and refuses when other "
          "files are present\n";
  for (const auto& [path, _] : files.files()) text += path + "\n";
  text += std::string(kManifestName) + "\n";
  files.add(std::string(kManifestName), text);
}

std::string manifest_source(const std::string& manifest_text) {
  std::istringstream in(manifest_text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '#') break;  // the header comes first
    if (line.starts_with(kSourcePrefix)) return line.substr(kSourcePrefix.size());
  }
  return {};
}

std::vector<OutputFolder> output_folders(const fs::path& root) {
  std::vector<OutputFolder> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  // Read as untrusted input (a pull request's tree): a linked folder or manifest is not trainc's.
  std::string error;
  const UntrustedFolder folder(root, error);
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (!e.is_directory(ec) || e.is_symlink(ec)) continue;
    if (e.path().filename().string().starts_with(".")) continue;  // a compile's temporary, not an output
    auto manifest = folder.read(e.path().filename().string() + "/" + std::string(kManifestName), error);
    if (!manifest) continue;
    out.push_back({e.path().filename().string(), manifest_source(*manifest)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

std::vector<UnknownEntry> unknown_entries(const fs::path& root, const std::set<std::string>& compared) {
  std::vector<UnknownEntry> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  std::set<std::string> ours;
  for (const auto& f : output_folders(root)) ours.insert(f.name);
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(root, ec)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const auto& p : entries) {
    const std::string name = p.filename().string();
    const fs::file_status st = fs::symlink_status(p, ec);
    if (ours.count(name) && !fs::is_symlink(st)) {
      if (compared.count(name)) continue;  // compare_tree reports what it holds
      std::string error;
      const auto listed =
          manifest_entries(UntrustedFolder(root, error).read(name + "/" + std::string(kManifestName), error).value_or(""));
      for (const auto& f : files_in(p))
        if (f != kManifestName && !listed.count(f)) out.push_back({(fs::path(name) / f).generic_string(), {}, 1});
      continue;
    }
    UnknownEntry u{name, {}, 0};
    if (fs::is_directory(st)) {
      for (const auto& f : files_in(p)) {
        if (u.files++ == 0) u.first = (fs::path(name) / f).generic_string();
      }
    } else {
      u.files = 1;
    }
    out.push_back(std::move(u));
  }
  return out;
}

std::optional<std::string> write_tree(const fs::path& root, const std::string& name, const OutputSink& files) {
  std::error_code ec;
  const fs::path target = root / name;
  if (fs::is_directory(root, ec)) clean_temporaries(root, name);
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec))
      return fmt::format("refusing to overwrite '{}': it is a file, not a folder trainc made", target.generic_string());
    if (auto err = check_ownership(target)) return err;
  }
  fs::create_directories(root, ec);
  if (ec) return fmt::format("cannot create '{}': {}", root.generic_string(), ec.message());
  const fs::path tmp = root / fmt::format(".{}.tmp-{}", name, getpid());
  const fs::path old = root / fmt::format(".{}.old-{}", name, getpid());
  fs::remove_all(tmp, ec);
  auto fail = [&](const std::string& what) {
    std::error_code ignore;
    fs::remove_all(tmp, ignore);
    return std::optional<std::string>(what);
  };
  for (const auto& [path, content] : files.files()) {
    write_step();
    fs::path p = tmp / path;
    fs::create_directories(p.parent_path(), ec);
    std::ofstream out(p, std::ios::binary);
    out << content;
    out.close();
    if (!out) return fail(fmt::format("cannot write '{}'", (target / path).generic_string()));
    // Scripts run as the runbook names them (scripts/up.sh), so they are executable.
    if (content.starts_with("#!")) {
      fs::permissions(p, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add, ec);
      if (ec) return fail(fmt::format("cannot make '{}' executable: {}", (target / path).generic_string(), ec.message()));
    }
  }
  write_step();
  if (fs::exists(target, ec)) {
    // One atomic exchange: at every instant `target` holds either the whole previous tree or the
    // whole new one, even if the process dies here. The previous tree is then left at `tmp`.
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
      write_step();
      fs::remove_all(tmp, ec);
      return std::nullopt;
    }
    if (errno != EINVAL && errno != ENOSYS)
      return fail(fmt::format("cannot replace '{}': {}", target.generic_string(), std::strerror(errno)));
    // A file system without RENAME_EXCHANGE: move the previous tree aside, then the new one in
    // (an interrupted compile's next run moves the previous tree back; see clean_temporaries).
    fs::rename(target, old, ec);
    if (ec) return fail(fmt::format("cannot replace '{}': {}", target.generic_string(), ec.message()));
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignore;
    if (fs::exists(old, ignore)) fs::rename(old, target, ignore);
    return fail(fmt::format("cannot move the new output into '{}': {}", target.generic_string(), ec.message()));
  }
  write_step();
  fs::remove_all(old, ec);
  return std::nullopt;
}

std::optional<std::string> write_generated_file(const fs::path& path, const std::string& content,
                                                const std::string& marker) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  std::optional<fs::perms> mode;
  if (fs::exists(st)) {
    if (fs::is_symlink(st))
      return fmt::format("refusing to write '{}': it is a symbolic link; name the file it points to",
                         path.generic_string());
    if (fs::is_directory(st)) return fmt::format("cannot write '{}': it is a folder", path.generic_string());
    auto old = fs::is_regular_file(st) ? read_file(path) : std::nullopt;
    if (!old || old->find(marker) == std::string::npos)
      return fmt::format("refusing to overwrite '{}': trainc did not write it; remove it or choose another file",
                         path.generic_string());
    mode = st.permissions();
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    return fmt::format("cannot write '{}': no folder '{}'", path.generic_string(), dir.generic_string());
  // A fresh temporary file beside the target (mkstemp: an unpredictable name, created exclusively).
  std::string tmpl = (dir / fmt::format(".{}.XXXXXX", path.filename().string())).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return fmt::format("cannot write '{}': {}", path.generic_string(), std::strerror(errno));
  const fs::path tmp = tmpl;
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool written = done == content.size() && ::close(fd) == 0;
  if (!written) {
    fs::remove(tmp, ec);
    return fmt::format("cannot write '{}'", path.generic_string());
  }
  // A replaced file keeps its mode; a new one gets the usual 0644 less the umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  fs::permissions(tmp, mode.value_or(static_cast<fs::perms>(0644 & ~mask)), ec);
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignore;
    fs::remove(tmp, ignore);
    return fmt::format("cannot write '{}': {}", path.generic_string(), ec.message());
  }
  return std::nullopt;
}

std::vector<FileDrift> compare_tree(const fs::path& root, const std::string& name, const OutputSink& files,
                                    std::string& error) {
  const fs::path dir = root / name;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    error = fmt::format("'{}' does not exist; run 'trainc compile' to create it", printable(dir.generic_string()));
    return {};
  }
  // The committed output is untrusted (a pull request's own): read without following links, each
  // file bounded (io/untrusted_folder.h).
  const UntrustedFolder folder(root, name, error);  // `name` itself reached without following a link
  if (!folder.open()) return {};
  std::map<std::string, FileDrift> drift;
  std::set<std::string> on_disk;
  for (const auto& e : folder.list("", error))
    if (e.type != UntrustedFolder::Entry::Type::folder) on_disk.insert(e.path);
  if (!error.empty()) return {};
  for (const auto& [path, content] : files.files()) {
    auto current = folder.read(path, error);
    if (!error.empty()) return {};
    if (!current || *current != content) drift[path] = FileDrift{path, current, content};
    on_disk.erase(path);
  }
  for (const auto& extra : on_disk) {
    auto current = folder.read(extra, error);
    if (!error.empty()) return {};
    drift[extra] = FileDrift{extra, current.value_or(""), std::nullopt};
  }
  std::vector<FileDrift> out;
  for (auto& [_, d] : drift) out.push_back(std::move(d));
  return out;
}

std::string unified_diff(const fs::path& root, const std::string& name, const std::vector<FileDrift>& drift) {
  std::string out;
  for (const auto& d : drift) {
    const std::string label = (root / name / d.path).generic_string();
    if (!d.before)
      out += fmt::format("--- /dev/null\n+++ {}\n(file missing: it would be generated)\n", label);
    else if (!d.after)
      out += fmt::format("--- {}\n+++ /dev/null\n(file present but not generated by this spec)\n", label);
    else
      out += run_diff(label, *d.before, label + " (compiled)", *d.after);
  }
  return out;
}

std::string diff_tree(const fs::path& root, const std::string& name, const OutputSink& files, std::string& error) {
  auto drift = compare_tree(root, name, files, error);
  return unified_diff(root, name, drift);
}

}  // namespace trainc
