#pragma once
// What a server reads from its stores (Service::store_contents), as the commands that fill them or
// look for them: scripts/apply.sh renders them at the rollout's kContents step (before the
// service's objects), health.sh looks for each needed object before asking the server, and the
// runbook shows the same commands a line each (emit_contents.cpp).
#include <string>
#include <vector>

#include "commands/command.h"
#include "model/model.h"
#include "quoting/shell.h"

namespace trainc {

/// The gs:// URL of an object a server needs.
std::string needed_url(const StoreContents& c, const NeededObject& n);

/// Why a needed object's absence stops the rollout, and how to fill the store: the spec key that
/// names a source, or the upload by hand.
std::string missing_message(const Service& s, const StoreContents& c, const NeededObject& n);

/// The runbook's commands for one kContents step, a line each, run from the output folder.
std::string contents_runbook_commands(const System& sys, const Service& s);

/// The runbook's sentence on where a service's store contents come from and when they go up ("" when
/// it reads none).
std::string contents_runbook_note(const System& sys, const Service& s);

namespace scripts {

/// Whether a service's contents come from a folder beside the spec: apply.sh then finds the spec's
/// folder first (find_spec_dir).
bool reads_spec_dir(const System& sys);

/// apply.sh's kContents step: fetch and check the pinned files, then upload; or, without a
/// source, die at once when a needed object is missing.
void contents_step(ShellScript& sh, const Service& s);

/// health.sh: dies at once, with missing_message(), when a needed object is not in its store.
void contents_lookups(ShellScript& sh, const Service& s);

}  // namespace scripts
}  // namespace trainc
