#pragma once
// How trainrt reports a problem: "trainrt COMMAND: message" on stderr, COMMAND being the subcommand
// as typed ("datagen", "probe live"; "train[2]" for rank 2 of a distributed run), lines after the
// first indented by two spaces. Every subcommand reports through here, so one prefix finds every
// problem in a pod's log. Progress lines ("datagen: ...", "train: round ...") are not reports.
#include <ostream>
#include <string>
#include <string_view>

namespace trainrt {

/// How a report reads after its prefix: a problem as it is ("trainrt datagen: --out is required"),
/// a warning or a note (neither stops the run) with that word first.
enum class Level { problem, warning, note };

/// Names the command later reports are made under. main() sets it once the command line is parsed;
/// a distributed train run adds its rank. Call it before starting threads that report.
void report_as(std::string_view command);

/// "trainrt COMMAND: ", or "trainrt: " before report_as. A buffer that report_as fills, so a
/// signal handler may write it.
const char* report_prefix();

/// The report's text, ending in a newline.
std::string report_text(std::string_view message, Level level = Level::problem);

/// Writes report_text to stderr, flushed: the process may be about to end.
void report(std::string_view message, Level level = Level::problem);
/// The same on `err` (a subcommand that writes its output to streams it is given).
void report(std::ostream& err, std::string_view message, Level level = Level::problem);

}  // namespace trainrt
