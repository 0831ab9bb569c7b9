#pragma once
// `trainc completion bash|zsh`: shell completion scripts generated from the command line's own
// definition (CLI11), so a new subcommand or flag completes without anyone editing a script.
#include <CLI/CLI.hpp>
#include <map>
#include <string>

namespace trainc {

/// What an option's value completes to, keyed "<subcommand> <long name>" ("compile --out") or
/// " <long name>" for the top level: "dir", "file", "spec", "paths" (schema field paths from
/// `trainc explain --list`) or a space-separated list of words.
using ValueKinds = std::map<std::string, std::string>;

/// The completion script for `shell` ("bash" or "zsh").
std::string completion_script(const CLI::App& app, const std::string& shell, const ValueKinds& values);

/// After a usage error: "did you mean 'check'?" for a misspelled subcommand, or "did you mean
/// '--format'?" for a misspelled long flag of the subcommand given; "" when neither applies.
/// `args` are the command-line arguments after the program name.
std::string usage_suggestion(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace trainc
