#pragma once
// Checkpoints: `model-dir/checkpoints/ckpt-000040.ubj` holds the model after 40 rounds. Each is
// written to a temporary (.tmp) name, fsynced and renamed, so a file with the final name is complete; the
// newest two are kept. On start the newest one that loads is resumed from, skipping (with a
// warning) any that do not.
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trainrt {

/// "ckpt-000040.ubj".
std::string checkpoint_name(int rounds);
/// The rounds in a checkpoint's file name, or nothing when NAME is not one.
std::optional<int> checkpoint_rounds(std::string_view name);

struct CheckpointFile {
  int rounds = 0;
  std::string path;
};

/// The checkpoints in DIR, newest first; none when DIR does not exist.
std::vector<CheckpointFile> list_checkpoints(const std::string& dir);

/// Called between a temporary file's fsync and its rename (tests kill the process there).
using BeforeRename = std::function<void()>;

/// Writes BYTES to PATH so that PATH is never seen partly written: PATH.<pid>.tmp, fsync, rename,
/// fsync of the folder. Throws std::runtime_error.
void write_file_atomically(const std::string& path, std::span<const char> bytes, const BeforeRename& hook = {});

/// Writes the checkpoint for `rounds` into DIR (created if missing), then deletes all but the
/// newest `keep` checkpoints. Throws std::runtime_error.
void save_checkpoint(const std::string& dir, int rounds, std::span<const char> bytes, int keep = 2,
                     const BeforeRename& hook = {});

/// Removes the .tmp files an interrupted writer left in DIR.
void remove_stale_temporaries(const std::string& dir);

struct LoadedCheckpoint {
  int rounds = 0;
  std::string path;
  std::vector<char> bytes;
};

/// Tries one checkpoint's bytes; returns an empty string when it is usable, else why not.
using CheckpointCheck = std::function<std::string(const std::vector<char>& bytes, int rounds)>;
/// Receives one warning line per checkpoint skipped.
using Warn = std::function<void(const std::string&)>;

/// The newest checkpoint in DIR that can be read and that `check` accepts.
std::optional<LoadedCheckpoint> select_checkpoint(const std::string& dir, const CheckpointCheck& check,
                                                  const Warn& warn);

}  // namespace trainrt
