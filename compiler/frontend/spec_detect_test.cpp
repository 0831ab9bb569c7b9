#include "frontend/spec_detect.h"

#include <doctest/doctest.h>

namespace trainc {

static std::optional<std::string> reason(const std::string& name, const std::string& text) {
  return non_spec_reason(std::make_shared<SourceFile>(name, text));
}

TEST_CASE("YAML files that are not trainc specs are told apart from specs, misspelled ones included") {
  CHECK_FALSE(reason("s.yaml", "apiVersion: trainc/v1\nkind: TrainingSystem\nname: x\n"));
  // Meant as specs: compiled, so that their mistakes are reported.
  CHECK_FALSE(reason("s.yaml", "apiVersion: trainc/v2\nkind: TrainingSystem\n"));
  CHECK_FALSE(reason("s.yaml", "apiVersion: trainc/v1\nkind: TrainingSytem\n"));
  CHECK_FALSE(reason("s.yaml", "apiVersion: train/v1\nkind: TrainingSystem\n"));
  CHECK_FALSE(reason("s.yaml", "kind: TrainingSystem\nname: x\n"));
  CHECK_FALSE(reason("s.yaml", "apiVersion: trainc/v1\nname: [unclosed\n"));
  CHECK_FALSE(reason("s.yaml", "---\napiVersion: trainc/v1\n---\napiVersion: trainc/v1\n"));

  CHECK(reason("w.yaml", "name: ci\non: push\n") == "no apiVersion: trainc/v1");
  CHECK(reason("d.yaml", "apiVersion: apps/v1\nkind: Deployment\n") == "apiVersion: apps/v1");
  CHECK(reason("m.yaml", "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: batch/v1\nkind: Job\n") ==
        "apiVersion: v1");
  CHECK(reason("l.yaml", "- a\n- b\n") == "not a mapping");
  CHECK(reason("e.yaml", "") == "empty");
  CHECK(reason("e.yaml", "# only a comment\n") == "empty");
  CHECK(reason("h.yaml", "metadata:\n  name: {{ .Values.name }\n") ==
        "not valid YAML, and no apiVersion: trainc/v1 in it");
}

TEST_CASE("Jsonnet files are judged by what they evaluate to") {
  CHECK_FALSE(reason("s.jsonnet", "{apiVersion: 'trainc/v1', kind: 'TrainingSystem', name: 'x'}"));
  CHECK(reason("o.jsonnet", "{apiVersion: 'apps/v1', kind: 'Deployment'}") == "apiVersion: apps/v1");
  CHECK(reason("n.jsonnet", "[1, 2]") == "not a mapping");
  CHECK_FALSE(reason("b.jsonnet", "local t = import 'trainc.libsonnet'; t.nope("));
  CHECK(reason("b.jsonnet", "{a: "));
}

}  // namespace trainc
