#pragma once
// Verify before writing: every Kubernetes object of a compiled output is validated against the
// Kubernetes OpenAPI schema of the target version, or the schema of the CRD that defines its kind,
// before a single file is written. The schemas are built at build time from the data under
// schemas/k8s and schemas/crds (tools/k8s_schemas.py) and embedded; each kind's schema is parsed
// the first time an object of that kind is checked, and once per process.
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/libyaml_events.h"
#include "base/output_sink.h"

namespace trainc {

/// The Kubernetes version built-in kinds are checked against ("1.33").
std::string_view k8s_schema_version();

/// One way an emitted object does not match its schema.
struct ObjectProblem {
  std::string file;     ///< the output file, e.g. "k8s/train-job.yaml"
  std::string object;   ///< "Job/mnist-train"
  std::string path;     ///< JSON pointer of the field, e.g. "/spec/template/spec/containers/0/foo"
  std::string message;  ///< the schema's complaint
  std::string schema;   ///< what was checked against, e.g. "Kubernetes 1.33 OpenAPI (io.k8s.api.batch.v1.Job)"
};

/// Every problem of one object (a document of `file`, already parsed); empty when it is valid.
std::vector<ObjectProblem> verify_object(const nlohmann::json& object, const std::string& file);

/// Every problem of the objects in the k8s/ files of `files` (the kustomization aside).
std::vector<ObjectProblem> verify_objects(const OutputSink& files);

/// An emitted object the API server would reject: a bug in trainc, not in the spec.
class InvalidObjectError : public std::logic_error {
 public:
  explicit InvalidObjectError(const std::string& what) : std::logic_error(what) {}
};

/// Throws InvalidObjectError, naming each object, file, field and complaint, when verify_objects
/// finds a problem.
void check_objects(const OutputSink& files);

/// The YAML documents of an emitted file as JSON, scalars typed as the API server's YAML decoder
/// (YAML 1.1, as sigs.k8s.io/yaml) types them, and null values dropped as its JSON decoder drops them.
/// Read with libyaml, which go-yaml was ported from. Throws YamlSyntaxError, or InvalidObjectError
/// for YAML that no emitter of trainc writes (aliases, nesting over 200 levels, keys that are not scalars).
std::vector<nlohmann::json> k8s_documents(const std::string& yaml_text);

}  // namespace trainc
