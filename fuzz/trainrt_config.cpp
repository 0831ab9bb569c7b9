// libFuzzer harness: what trainrt parses from text other than shards. The input's first line names
// the parser, the rest is its text:
//   table     the rest is DIR/_trainrt_table.json, read as training reads it (read_table_description)
//             and as `trainrt inspect` reads it (summarize_table, over a folder with no shards)
//   params    .trainrt-params.json as a datagen rerun compares it (claim_folder)
//   options   lines of `trainrt train` input: "param K=V" (--param), "env NAME=VALUE" (RANK,
//             WORLD_SIZE, TRACKER_ADDR, JOB_COMPLETION_INDEX), "tracker H:P", "device D",
//             "dmatrix M", "rounds N", "threads N", "eval F", "rank N", "world N"; then
//             resolve_options and the XGBoost parameter list
//   size      lines of datagen --size values (the byte-size grammar) and the rows they give
// The table and params files go to a private temporary folder, made once per process.
#include <stdlib.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "datagen/inspect.h"
#include "datagen/spec.h"
#include "datagen/table.h"
#include "fuzz_file.h"
#include "train/train_data.h"
#include "train/train_options.h"

namespace fs = std::filesystem;

namespace {

std::string g_dir;

/// Writes one file into the private folder; it is removed again when the input is done, so each
/// input sees a folder holding only its own file.
struct TempFile {
  TempFile(const std::string& name, const std::string& text) : path(g_dir + "/" + name) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  std::string path;
};

template <typename T>
bool number(const std::string& text, T& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

void table(const std::string& text) {
  const TempFile file(trainrt::datagen::kTableFile, text);
  try {
    (void)trainrt::read_table_description(g_dir,
                                          {g_dir + "/part-00000-of-00002.trs", g_dir + "/part-00001-of-00002.trs"});
  } catch (const trainrt::ShardError&) {
  }
  try {
    (void)trainrt::datagen::summarize_table(g_dir, true);
  } catch (const std::exception&) {  // as run_inspect, which prints what() and exits 1
  }
}

void params(const std::string& text) {
  const TempFile file(trainrt::datagen::kParamsFile, text);
  trainrt::datagen::Spec spec;
  spec.rows = 1000;
  trainrt::datagen::Layout layout;
  try {
    trainrt::datagen::claim_folder(g_dir, trainrt::datagen::to_json(spec, layout));
  } catch (const std::runtime_error&) {
  }
}

void options(const std::string& text) {
  trainrt::TrainOptions o;
  o.data_dir = "data";
  o.model_dir = "model";
  o.rounds = 10;
  std::map<std::string, std::string> env;
  std::istringstream in(text);
  std::string line;
  try {
    while (std::getline(in, line)) {
      const auto sp = line.find(' ');
      const std::string key = line.substr(0, sp), value = sp == std::string::npos ? "" : line.substr(sp + 1);
      if (key == "param") {
        o.params.push_back(trainrt::parse_param(value));
      } else if (key == "env") {
        const auto eq = value.find('=');
        if (eq != std::string::npos) env[value.substr(0, eq)] = value.substr(eq + 1);
      } else if (key == "tracker") {
        (void)trainrt::parse_host_port(value);
        o.tracker = value;
      } else if (key == "device") {
        o.device = value;
      } else if (key == "dmatrix") {
        o.dmatrix = value;
      } else if (key == "rounds") {
        number(value, o.rounds);
      } else if (key == "threads") {
        number(value, o.threads);
      } else if (key == "eval") {
        o.eval_fraction = std::strtod(value.c_str(), nullptr);
      } else if (key == "rank") {
        number(value, o.rank);
      } else if (key == "world") {
        number(value, o.world_size);
      }
    }
    trainrt::resolve_options(o, [&](const char* name) -> const char* {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  } catch (const trainrt::UsageError&) {
    return;
  }
  const auto list = trainrt::booster_params(o);
  (void)trainrt::param_value(list, "max_bin", "256");
  (void)trainrt::draws_unsaved_randomness(list);
  (void)trainrt::use_quantile_dmatrix(o, list);
}

void sizes(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto bytes = trainrt::datagen::parse_size(line);
    if (!bytes) continue;
    for (uint32_t features : {1u, 20u, 65536u}) {
      trainrt::datagen::Spec spec;
      spec.features = features;
      spec.rows = trainrt::datagen::rows_for_bytes(*bytes, features);
      (void)trainrt::datagen::validate(spec, trainrt::datagen::Layout{});
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string dir = trainc_fuzz::make_temp_dir("trainrt-fuzz-config");
  g_dir = dir;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto nl = input.find('\n');
  const std::string mode = input.substr(0, nl), rest = nl == std::string::npos ? "" : input.substr(nl + 1);
  if (mode == "table")
    table(rest);
  else if (mode == "params")
    params(rest);
  else if (mode == "options")
    options(rest);
  else if (mode == "size")
    sizes(rest);
  return 0;
}
