#include "base/yaml_writer.h"

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

namespace trainc {

TEST_CASE("strings that YAML would type are quoted") {
  for (const char* s : {"true", "yes",  "on",   "0",    "1200",  "0755",  "0.1", "1e3",   "null",   "~",   "",
                        "- x",  "a: b", "x #y", "[a]",  "12:30", "FALSE", "Off", "NO",    "Y",      "+.5", "-.inf",
                        ".NaN", "<<",   "=",    "0x1F", "0o17",  "0b101", "+12", "1_000", "-1.5e-3", ".", "-."})
    CHECK_MESSAGE(!yaml_plain_safe(s), s);
  for (const char* s : {"Python Sample v3", "s3://bucket/path/", "--epochs=1", "nvidia-tesla-t4", "IfNotPresent",
                        "offset", "Yesterday", "nullable", "on-demand", "yes2", "True.", "nan", "inf", "x1", "..", "./run"})
    CHECK_MESSAGE(yaml_plain_safe(s), s);
}

TEST_CASE("output reads back as the same document") {
  nlohmann::ordered_json doc = {{"kind", "Job"},
                                {"metadata", {{"name", "x"}, {"labels", {{"batch-size", "1200"}, {"flag", "true"}}}}},
                                {"spec",
                                 {{"items", {{{"a", 1}, {"b", "two"}}, "plain", nlohmann::ordered_json::array()}},
                                  {"empty", nlohmann::ordered_json::object()},
                                  {"script", "#!/bin/bash\nset -e\n  indented\n"},
                                  {"nested", {{1, 2}}}}}};
  std::string text = to_yaml(doc, "header line");
  CHECK(text.rfind("# header line\nkind: Job\n", 0) == 0);
  YAML::Node back = YAML::Load(text);
  CHECK(back["metadata"]["labels"]["batch-size"].Tag() == "!");
  CHECK(back["metadata"]["labels"]["batch-size"].as<std::string>() == "1200");
  CHECK(back["spec"]["items"][0]["b"].as<std::string>() == "two");
  CHECK(back["spec"]["items"][2].size() == 0);
  CHECK(back["spec"]["script"].as<std::string>() == "#!/bin/bash\nset -e\n  indented\n");
  CHECK(back["spec"]["nested"][0][1].as<int>() == 2);
  CHECK(text.find("script: |\n    #!/bin/bash\n") != std::string::npos);
}

TEST_CASE("long one-line strings fold and read back unchanged") {
  std::string words;
  for (int i = 0; i < 40; ++i) words += (i ? " " : "") + std::string("{\"eth") + std::to_string(i) + "\": 1},";
  nlohmann::ordered_json doc = {{"a", words}, {"b", {words}}};
  std::string text = to_yaml(doc);
  CHECK(text.find("a: >-\n") != std::string::npos);
  size_t longest = 0, start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    longest = std::max(longest, end - start);
    start = end + 1;
  }
  CHECK(longest <= 130);
  YAML::Node back = YAML::Load(text);
  CHECK(back["a"].as<std::string>() == words);
  CHECK(back["b"][0].as<std::string>() == words);
}

TEST_CASE("characters YAML parsers treat specially are escaped, and the value reads back the same") {
  const std::vector<std::string> hostile = {"del\x7f",
                                            "nel\xc2\x85",
                                            "csi\xc2\x9b[31m",
                                            "ls\xe2\x80\xa8ps\xe2\x80\xa9",
                                            "bom\xef\xbb\xbf",
                                            "bell\x07",
                                            "multi\nline\xc2\x85",
                                            "tab\there",
                                            "caf\xc3\xa9 plain",
                                            "$(touch /tmp/pwned); `id` 'q' \"dq\""};
  for (const auto& s : hostile) {
    CAPTURE(s);
    nlohmann::ordered_json doc;
    doc["k"] = s;
    const std::string text = to_yaml(doc);
    // No raw C0/C1 control, DEL, separator or BOM survives in the text (the newline ending the line aside).
    for (const char* raw :
         {"\x7f", "\xc2\x85", "\xc2\x9b", "\xe2\x80\xa8", "\xe2\x80\xa9", "\xef\xbb\xbf", "\x07", "\t"})
      CHECK(text.find(raw) == std::string::npos);
    CHECK(YAML::Load(text)["k"].as<std::string>() == s);
  }
  // Bytes that are not UTF-8 cannot be written as themselves: the output stays valid YAML.
  nlohmann::ordered_json doc;
  doc["k"] = std::string("bad\xff byte");
  const std::string text = to_yaml(doc);
  CHECK(text.find('\xff') == std::string::npos);
  CHECK(text.find("\\xff") != std::string::npos);
}

}  // namespace trainc
