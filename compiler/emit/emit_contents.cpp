// The commands that fill a server's store folders before it starts, or look for what it needs
// there (emit/contents.h). apply.sh reads a folder beside the spec where the compile recorded the
// spec (find_spec_dir), so it works in any checkout holding the spec and its output; the runbook
// names the folder from the output folder as compiled (Origin::spec_path_from). Fetched files go
// to a fresh temporary folder and are checked against their SHA-256 before anything is uploaded.
#include "emit/contents.h"

#include <fmt/format.h>

#include "base/data_path.h"
#include "emit/emit_scripts.h"

namespace trainc {
namespace {

/// The spec's data path of the key that names a source, e.g. services.triton.triton.source.
std::string source_key(const Service& s, const StoreContents& c) {
  return ptr_display(ptr_key(ptr_key(s.ptr, s.kind()), c.source_key));
}

/// Where the source is, for a message or the runbook.
std::string source_text(const ContentSource& src) {
  return src.gcs.empty() ? fmt::format("the folder '{}' beside the spec", src.folder) : src.gcs;
}

/// The shell variable holding the folder the runbook fetches into (made by mktemp -d).
constexpr std::string_view kRunbookStaging = "TRAINC_STAGE";

CommandLine fetch_call(const FetchedFile& f, const std::string& file_word) {
  CommandLine c;
  c.arg("curl").arg("-fsSL").arg("--retry").arg("3").arg("--create-dirs").arg("-o").word(file_word);
  return c.arg(f.url);
}

}  // namespace

std::string needed_url(const StoreContents& c, const NeededObject& n) { return c.folder->url + "/" + n.path; }

std::string missing_message(const Service& s, const StoreContents& c, const NeededObject& n) {
  const std::string head = fmt::format("{} of service '{}' is not in {} (no {})", n.what, s.name, c.folder->url, n.path);
  if (c.source)
    return fmt::format("{}, though scripts/apply.sh uploads it from {} ({}) before the server starts: run "
                       "scripts/apply.sh",
                       head, source_text(*c.source), source_key(s, c));
  return fmt::format("{}: the store folder is empty or incomplete, and nothing fills it; the server reads it only "
                     "when it starts. Name where its contents come from in {} (a folder beside the spec, or "
                     "gs://...), which scripts/apply.sh uploads, or upload them yourself: {}",
                     head, source_key(s, c), cmd::storage_rsync("FOLDER", c.folder->url).line());
}

std::string contents_runbook_commands(const System& sys, const Service& s) {
  std::string md;
  for (const StoreContents& c : s.store_contents()) {
    if (!c.source) {
      for (const NeededObject& n : c.needs) md += cmd::storage_ls(needed_url(c, n)).line() + "\n";
      continue;
    }
    // One command chained with &&: pasted as a block, a failed download or check stops the
    // uploads after it. Downloads go to a fresh folder of mktemp's, which no other user can
    // have made beforehand.
    std::vector<std::string> chain;
    const bool fetches = !c.source->fetch.empty();
    if (fetches) chain.push_back(std::string(kRunbookStaging) + "=$(mktemp -d)");
    for (const FetchedFile& f : c.source->fetch) {
      chain.push_back(fetch_call(f, scripts::dq(scripts::Var{kRunbookStaging}, "/" + f.to)).line());
      chain.push_back("sha256sum --check <<<" + scripts::dq(f.sha256 + "  ", scripts::Var{kRunbookStaging}, "/" + f.to));
    }
    const std::string from = c.source->gcs.empty() ? sys.origin.spec_path_from("", sys.name, c.source->folder)
                                                   : c.source->gcs;
    if (!c.source->folder.empty() || !c.source->gcs.empty())
      chain.push_back(cmd::storage_rsync(sh_quote(from), c.folder->url).line());
    if (fetches) {
      chain.push_back(cmd::storage_rsync(scripts::ref(kRunbookStaging), c.folder->url).line());
      chain.push_back("rm -rf " + scripts::ref(kRunbookStaging));
    }
    md += fmt::format("{}\n", fmt::join(chain, " &&\n"));
  }
  return md;
}

std::string contents_runbook_note(const System& sys, const Service& s) {
  std::string md;
  for (const StoreContents& c : s.store_contents()) {
    if (!c.source) {
      if (c.needs.empty()) continue;
      md += fmt::format("Nothing fills `{}`, which service `{}` reads when it starts (`{}` names no source): put "
                        "what it needs there before applying, e.g. `{}`. `scripts/apply.sh` and "
                        "`scripts/health.sh` stop at once when something is missing.\n\n",
                        c.folder->url, s.name, source_key(s, c), cmd::storage_rsync("FOLDER", c.folder->url).line());
      continue;
    }
    std::vector<std::string> from;
    if (!c.source->folder.empty())
      from.push_back(fmt::format("the folder `{}` beside the spec (`{}` from here)", c.source->folder,
                                 sys.origin.spec_path_from("", sys.name, c.source->folder)));
    if (!c.source->gcs.empty()) from.push_back(fmt::format("`{}`", c.source->gcs));
    if (!c.source->fetch.empty())
      from.push_back(fmt::format("{} file(s) downloaded from the web and checked against their pinned SHA-256 "
                                 "(`{}`)",
                                 c.source->fetch.size(), source_key(s, c) + ".fetch"));
    md += fmt::format("Service `{}` reads `{}` when it starts, so it is filled first, before the service's objects "
                      "are applied: from {}. `scripts/apply.sh` (and so CI) makes the same uploads, which add "
                      "and replace objects and delete none; a download whose SHA-256 differs stops it before "
                      "anything is uploaded.\n\n",
                      s.name, c.folder->url, fmt::join(from, ", then "));
  }
  return md;
}

namespace scripts {

namespace {

/// Dies at once, saying what is missing and how to fill the store, when a needed object is not there.
void lookups(ShellScript& sh, const Service& s, const StoreContents& c) {
  for (const NeededObject& n : c.needs) {
    for (const auto& l : render(cmd::storage_ls(needed_url(c, n)), "run ", " >/dev/null ||")) sh.line(l);
    sh.line("  die " + dq(missing_message(s, c, n)));
  }
}

}  // namespace

bool reads_spec_dir(const System& sys) {
  for (const auto& [_, s] : sys.services)
    for (const StoreContents& c : s.store_contents())
      if (c.source && !c.source->folder.empty()) return true;
  return false;
}

void contents_lookups(ShellScript& sh, const Service& s) {
  for (const StoreContents& c : s.store_contents()) lookups(sh, s, c);
}

void contents_step(ShellScript& sh, const Service& s) {
  for (const StoreContents& c : s.store_contents()) {
    if (!c.source && c.needs.empty()) continue;
    sh.line();
    if (!c.source) {
      sh.comment(fmt::format("Service '{}' reads {} when it starts; nothing here fills it ({}", s.name, c.folder->url,
                             source_key(s, c)));
      sh.comment("names no source): stop now if what it needs is not there.");
      lookups(sh, s, c);
      continue;
    }
    const ContentSource& src = *c.source;
    sh.comment(fmt::format("Service '{}' reads {} when it starts: fill it first, from", s.name, c.folder->url));
    sh.comment(fmt::format("{}{}.", source_text(src),
                           src.fetch.empty() ? "" : ", then files fetched and checked against their pinned SHA-256"));
    if (!src.fetch.empty()) {
      sh.comment("A download that differs stops here, before anything is uploaded.");
      sh.line("FETCHED=$(mktemp -d)");
      for (const FetchedFile& f : src.fetch) {
        const std::string file = dq("", Var{"FETCHED"}, "/" + f.to);
        for (const auto& l : render(fetch_call(f, file), "run ", "")) sh.line(l);
        sh.open("if [ \"$DRY_RUN\" = 0 ]; then")
            .line("sha256sum --check --status <<<" + dq(f.sha256 + "  ", Var{"FETCHED"}, "/" + f.to) + " ||")
            .line("  die " + dq(fmt::format("{} is not the file {} pins (SHA-256 {}); nothing was uploaded", f.url,
                                            source_key(s, c) + ".fetch", f.sha256)))
            .close("fi");
      }
    }
    if (!src.folder.empty()) {
      // Beside the spec, at the place recorded at compile time (find_spec_dir), from any checkout.
      call(sh, cmd::storage_rsync(in_spec_dir(src.folder), c.folder->url));
    } else if (!src.gcs.empty()) {
      call(sh, cmd::storage_rsync(lit(src.gcs), c.folder->url));
    }
    if (!src.fetch.empty()) {
      call(sh, cmd::storage_rsync(ref("FETCHED"), c.folder->url));
      sh.line("rm -rf \"$FETCHED\"");
    }
  }
}

}  // namespace scripts
}  // namespace trainc
