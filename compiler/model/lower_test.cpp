#include "model/lower.h"

#include <doctest/doctest.h>

#include "frontend/yaml_loader.h"

namespace trainc {

static std::optional<System> lower_text(const std::string& text, Diagnostics& diags) {
  auto doc = load_yaml(std::make_shared<SourceFile>("s.yaml", text), diags);
  REQUIRE(doc);
  return lower(*doc, diags);
}

static const char* kHead =
    "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
    "cluster:\n  pools:\n    gpu: {machine: n1-standard-4, accelerator: {type: nvidia-tesla-t4, count: 4}, nodes: 2}\n"
    "storage:\n  b: {s3: {bucket: bkt, prefix: /runs/}}\n";

TEST_CASE("defaults come from the pool and the step") {
  Diagnostics diags;
  auto sys = lower_text(std::string(kHead) +
                            "pipeline:\n  - name: train\n    image: i\n    pool: gpu\n    workdir: /w\n"
                            "    torchrun: {script: t.py, args: [--epochs, 1]}\n"
                            "    inputs: [{from: 'b:/data/', to: data}]\n",
                        diags);
  REQUIRE_MESSAGE(sys, diags.render_text());
  const Step& s = sys->steps[0];
  CHECK(sys->ns == "sys");
  CHECK(sys->owns_namespace);
  CHECK(s.gpus == 4);
  CHECK(s.procs_per_node == 4);
  CHECK(s.shm == "8Gi");
  CHECK(s.retries == 2);
  const Torchrun* t = s.as<Torchrun>();
  REQUIRE(t != nullptr);
  CHECK(t->script == "/w/t.py");
  CHECK(t->args == std::vector<std::string>{"--epochs", "1"});
  CHECK(t->port == 29500);
  CHECK(s.inputs[0].to == "/w/data");
  CHECK(s.inputs[0].from.url == "s3://bkt/runs/data/");
  CHECK(s.heartbeat.max_age_seconds == 3600);
}

TEST_CASE("a Dask client step gets its cluster's mounts, but where it mounts a path itself") {
  Diagnostics diags;
  auto sys = lower_text(
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
      "gcp: {project: my-project, region: us-central1}\nidentity: {serviceAccount: trainer}\n"
      "cluster:\n  pools:\n    cpu: {machine: n2-standard-8, nodes: 3}\n"
      "storage:\n  data: {gcs: {bucket: d}}\n  out: {gcs: {bucket: o}}\n"
      "clusters:\n  dask:\n    engine: dask\n    image: ghcr.io/dask/dask:2024.12.1\n    scheduler: {pool: cpu}\n"
      "    workers: {cpu: {pool: cpu, replicas: 2}}\n"
      "    mounts: [{store: data, path: /data}, {store: data, path: /results}]\n"
      "pipeline:\n  - name: client\n    cluster: dask\n    command: [python3, c.py]\n"
      "    mounts: [{store: out, path: /results}]\n",
      diags);
  REQUIRE_MESSAGE(sys, diags.render_text());
  const Step& s = sys->steps[0];
  REQUIRE(s.mounts.size() == 2);
  CHECK(s.mounts[0].store == "out");  // its own, at /results
  CHECK(s.mounts[0].path == "/results");
  CHECK(s.mounts[1].store == "data");  // the cluster's /data
  CHECK(s.mounts[1].path == "/data");
}

TEST_CASE("a TPU pool is one node pool, or one per slice") {
  Diagnostics diags;
  auto sys = lower_text(
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
      "cluster:\n  pools:\n    one: {machine: ct5lp-hightpu-4t, tpu: {topology: 2x4}}\n"
      "    multi: {machine: ct5lp-hightpu-4t, tpu: {topology: 4x4, slices: 3}}\n"
      "    cpu: {machine: e2-standard-4}\n"
      "pipeline: [{name: s, image: i, command: [x]}]\n",
      diags);
  REQUIRE_MESSAGE(sys, diags.render_text());
  const Pool& one = sys->pools.at("one");
  CHECK(one.tpu->slices == 1);
  CHECK(one.node_pools() == std::vector<std::string>{"one"});
  const Pool& multi = sys->pools.at("multi");
  CHECK(multi.tpu->slices == 3);
  CHECK(multi.tpu->hosts == 4);
  CHECK(multi.nodes == 4);  // per slice: each node pool is one slice
  CHECK(multi.node_pools() == std::vector<std::string>{"multi-0", "multi-1", "multi-2"});
  CHECK(sys->pools.at("cpu").node_pools() == std::vector<std::string>{"cpu"});
}

TEST_CASE("steps are ordered by needs, keeping spec order otherwise") {
  Diagnostics diags;
  auto sys = lower_text(std::string(kHead) +
                            "pipeline:\n  - {name: c, image: i, command: [x], needs: [b]}\n"
                            "  - {name: a, image: i, command: [x]}\n  - {name: b, image: i, command: [x], needs: [a]}\n",
                        diags);
  REQUIRE(sys);
  std::vector<std::string> order;
  for (const auto& s : sys->steps) order.push_back(s.name);
  CHECK(order == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("unknown references are reported with suggestions") {
  Diagnostics diags;
  CHECK_FALSE(lower_text(std::string(kHead) +
                             "pipeline:\n  - {name: a, image: i, command: [x], pool: gpus, needs: [bb]}\n"
                             "  - {name: b, image: i, command: [x], inputs: [{from: 'bb:/x', to: y}]}\n",
                         diags));
  auto all = diags.sorted();
  REQUIRE(all.size() == 3);
  CHECK(all[0].message == "unknown pool 'gpus'; did you mean 'gpu'?");
  CHECK(all[1].message == "unknown step 'bb' in needs; did you mean 'b'?");
  CHECK(all[2].message == "unknown store 'bb' in 'bb:/x'; did you mean 'b'?");
}

TEST_CASE("a bucket URL where a store reference belongs gets the reference through the store of that bucket") {
  Diagnostics diags;
  CHECK_FALSE(lower_text(std::string(kHead) +
                             "  g: {gcs: {bucket: models, create: false}}\n"
                             "pipeline:\n  - {name: a, image: i, command: [x], inputs: [{from: 's3://bkt/runs/data/', to: y}]}\n"
                             "  - {name: b, image: i, command: [x], inputs: [{from: 's3://other/x', to: y}]}\n"
                             "  - {name: c, image: i, command: [x], inputs: [{from: 'bkt:/runs/x', to: y}]}\n"
                             "  - {name: d, image: i, command: [x], inputs: [{from: 's3://bkt/elsewhere', to: y}]}\n"
                             "  - {name: e, image: i, command: [x], inputs: [{from: 's3://models/m', to: y}]}\n"
                             "  - {name: f, image: i, command: [x], inputs: [{from: 'zzz:/x', to: y}]}\n"
                             "  - {name: g, image: i, command: [x], mounts: [{store: models, path: /m}]}\n",
                         diags));
  std::vector<std::string> messages;
  for (const auto& d : diags.sorted()) messages.push_back(d.message);
  const std::string form = "write '<store>:/path', not a URL, where <store> is a key of 'storage' (b, g); ";
  CHECK(messages == std::vector<std::string>{
                        "unknown store 's3' in 's3://bkt/runs/data/': " + form +
                            "did you mean 'b:/data/'? (store 'b' is bucket 'bkt')",
                        "unknown store 's3' in 's3://other/x': " + form +
                            "no store is bucket 'other': declare one under 'storage' (<name>: {s3: {bucket: other}}) "
                            "and write '<name>:/x'",
                        "unknown store 'bkt' in 'bkt:/runs/x'; did you mean 'b:/x'? (store 'b' is bucket 'bkt')",
                        "unknown store 's3' in 's3://bkt/elsewhere': " + form +
                            "store 'b' is bucket 'bkt' under prefix 'runs', which '/elsewhere' is outside",
                        "unknown store 's3' in 's3://models/m': " + form + "store 'g' is bucket 'models' in GCS, not S3",
                        "unknown store 'zzz' in 'zzz:/x'; the stores of 'storage' are b, g",
                        "unknown store 'models'; did you mean 'g'? (store 'g' is bucket 'models')",
                    });
}

TEST_CASE("integers that do not fit are reported at their line, never wrapped") {
  // The schema's maximums stop these first; lowering must hold on its own (Jsonnet floats, new fields).
  Diagnostics diags;
  auto sys = lower_text(std::string(kHead) +
                            "pipeline:\n  - name: train\n    image: i\n    command: [x]\n"
                            "    nodes: 99999999999\n    retries: 4294967297\n    procsPerNode: -3000000000\n",
                        diags);
  CHECK(!sys);
  const std::string text = diags.render_text();
  CHECK(text.find("s.yaml:13:12: error: 'nodes' is 99999999999, too large for trainc: at most 2147483647") !=
        std::string::npos);
  CHECK(text.find("s.yaml:14:14: error: 'retries' is 4294967297, too large") != std::string::npos);
  CHECK(text.find("'procsPerNode' is -3000000000, too small for trainc: at least -2147483648") != std::string::npos);
}

TEST_CASE("a step names exactly one kind") {
  Diagnostics diags;
  auto sys = lower_text(std::string(kHead) +
                            "pipeline:\n  - name: train\n    image: i\n    command: [x]\n"
                            "    torchrun: {script: t.py}\n",
                        diags);
  CHECK(!sys);
  CHECK(diags.render_text().find("step 'train' sets both 'torchrun' and 'command'; keep one") != std::string::npos);
  Diagnostics none;
  CHECK(!lower_text(std::string(kHead) + "pipeline:\n  - name: train\n    image: i\n", none));
  CHECK(none.render_text().find("says nothing to run") != std::string::npos);
}

TEST_CASE("an XGBoost step's objective and eval metric come from the table a datagen step writes") {
  const std::string head =
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
      "gcp: {project: my-project, region: us-central1, zone: us-central1-a}\n"
      "runtime: {image: trainrt:1}\n"
      "storage:\n  data: {gcs: {bucket: bkt}}\nidentity: {serviceAccount: ml-ksa}\n"
      "pipeline:\n  - name: gen\n";
  const std::string train = "  - name: train\n    needs: [gen]\n    xgboost: {from: 'data:/t', to: 'data:/m', rounds: 2}\n";
  struct Case {
    std::string datagen, objective, metric, num_class;
  };
  for (const Case& c : {Case{"{rows: 10, features: 4, to: 'data:/t'}", "binary:logistic", "logloss", ""},
                        Case{"{rows: 10, features: 4, classes: 3, to: 'data:/t/'}", "multi:softprob", "mlogloss", "3"},
                        Case{"{rows: 10, features: 4, task: regression, to: 'data:/t'}", "reg:squarederror", "rmse",
                             ""}}) {
    Diagnostics diags;
    auto sys = lower_text(head + "    datagen: " + c.datagen + "\n" + train, diags);
    REQUIRE_MESSAGE(sys, diags.render_text());
    const XGBoost* x = sys->steps[1].as<XGBoost>();
    REQUIRE(x != nullptr);
    CHECK(x->params.at("objective") == c.objective);
    CHECK(x->params.at("eval_metric") == c.metric);
    CHECK((x->params.count("num_class") ? x->params.at("num_class") : "") == c.num_class);
  }
}

TEST_CASE("a Triton repository's source: fetched files may bring what a model needs; paths are normalised") {
  const std::string head =
      "apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n"
      "storage:\n  m: {gcs: {bucket: b}}\n"
      "services:\n  t:\n    triton:\n      repository: 'm:/r'\n      models: [a, b]\n";
  const std::string pin = "79c3bc0974696a2ea9efd2f7bca19fdd630834bd0086f1b4a1c3db3dce3b2a51";
  auto fetch = [&](const std::string& to) {
    return "          - {url: 'https://example.com/x', sha256: " + pin + ", to: '" + to + "'}\n";
  };
  Diagnostics diags;
  auto sys = lower_text(head + "      source:\n        fetch:\n" + fetch("a/config.pbtxt") + fetch("./b//config.pbtxt") +
                            fetch("a/1/model.onnx") + fetch("b/2/model.onnx"),
                        diags);
  REQUIRE_MESSAGE(sys, diags.render_text());
  const Triton* t = sys->services.at("t").as<Triton>();
  REQUIRE(t != nullptr);
  REQUIRE(t->source);
  CHECK(t->source->folder.empty());
  REQUIRE(t->source->fetch.size() == 4);
  CHECK(t->source->fetch[1].to == "b/config.pbtxt");
  CHECK(t->source->fetch[1].sha256 == pin);

  // A model no fetched file brings, a file fetched twice to one path: each reported where it is written.
  Diagnostics bad;
  lower_text(head + "      source:\n        fetch:\n" + fetch("a/config.pbtxt") + fetch("a/config.pbtxt") +
                 fetch("a/1/model.onnx"),
             bad);
  const std::string text = bad.render_text();
  CHECK(bad.error_count() == 2);
  CHECK(text.find("two files are fetched to 'a/config.pbtxt'; keep one") != std::string::npos);
  CHECK(text.find("model 'b' is not in the fetched files: the repository needs b/config.pbtxt") != std::string::npos);
  CHECK(text.find("services.t.triton.models[1]") != std::string::npos);
  // A model with its config and no numbered version folder: Triton would not load it.
  Diagnostics unversioned;
  lower_text(head + "      source:\n        fetch:\n" + fetch("a/config.pbtxt") + fetch("b/config.pbtxt") +
                 fetch("a/1/model.onnx") + fetch("b/v1/model.onnx"),
             unversioned);
  CHECK(unversioned.error_count() == 1);
  CHECK(unversioned.render_text().find("model 'b' has no version in the fetched files") != std::string::npos);
}

TEST_CASE("topology-aware placement: the catalog's default on fixed-size labelled pools behind a queue, the spec's otherwise") {
  auto with = [](const std::string& queue, const std::string& a4, const std::string& step_extra) {
    Diagnostics diags;
    auto sys = lower_text("apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\n" + queue +
                              "cluster:\n  pools:\n    cpu: {machine: e2-standard-8}\n    a4: " + a4 + "\n"
                              "pipeline:\n  - {name: big, image: i, pool: a4, nodes: 4, gpus: 8, torchrun: {script: t.py}" +
                              step_extra + "}\n  - {name: one, image: i, pool: a4, gpus: 8, torchrun: {script: t.py}}\n"
                              "  - {name: prep, image: i, pool: cpu, command: [x]}\n",
                          diags);
    REQUIRE_MESSAGE(sys, diags.render_text());
    return *sys;
  };
  using K = TopologyRequest::Kind;
  {  // fixed size, labelled machine, queue: prefers one block; a single pod asks for nothing in particular
    const System sys = with("queue: {}\n", "{machine: a4-highgpu-8g, nodes: 4}", "");
    CHECK(sys.pools.at("a4").tas());
    CHECK(sys.pools.at("a4").placement.ptr.empty());
    const TopologyRequest big = topology_request(sys, sys.steps[0]);
    CHECK(big.kind == K::kPreferred);
    CHECK(big.label == "cloud.google.com/gce-topology-block");
    CHECK(topology_request(sys, sys.steps[1]).kind == K::kUnconstrained);
    CHECK(!sys.pools.at("cpu").tas());
    CHECK(topology_request(sys, sys.steps[2]).kind == K::kNone);
  }
  {  // no queue: nothing, whatever the machine
    const System sys = with("", "{machine: a4-highgpu-8g, nodes: 4}", "");
    CHECK(topology_request(sys, sys.steps[0]).kind == K::kNone);
  }
  {  // a pool that may be smaller than its largest: none by default, and the reason
    const System sys = with("queue: {}\n", "{machine: a4-highgpu-8g, autoscaling: {min: 0, max: 4}}", "");
    CHECK(!sys.pools.at("a4").tas());
    CHECK(sys.pools.at("a4").placement.why_none.find("may have 0 nodes of its 4") != std::string::npos);
  }
  {  // the pool's own placement, and a step's replacing it
    const System sys = with("queue: {}\n", "{machine: a4-highgpu-8g, nodes: 4, placement: {level: host}}",
                            ", placement: {level: subblock, required: true}");
    CHECK(sys.pools.at("a4").placement.level == "host");
    const TopologyRequest big = topology_request(sys, sys.steps[0]);
    CHECK(big.kind == K::kRequired);
    CHECK(big.describe() == "required subblock");
    CHECK(topology_request(sys, sys.pools.count("a4") ? &sys.pools.at("a4") : nullptr, 4).describe() == "preferred host");
  }
  {  // a step's level none: unconstrained, still asking (a mixed queue gives a TAS flavor only to those that ask)
    const System sys = with("queue: {}\n", "{machine: a4-highgpu-8g, nodes: 4}", ", placement: {level: none}");
    CHECK(topology_request(sys, sys.steps[0]).kind == K::kUnconstrained);
  }
  {  // the pool's level none: no Topology for it
    const System sys = with("queue: {}\n", "{machine: a4-highgpu-8g, nodes: 4, placement: {level: none}}", "");
    CHECK(!sys.pools.at("a4").tas());
    CHECK(topology_request(sys, sys.steps[0]).kind == K::kNone);
  }
}

TEST_CASE("topology: a step that names no pool asks unconstrained when every pool it could use is placed by topology") {
  Diagnostics diags;
  auto sys = lower_text("apiVersion: trainc/v1\nkind: TrainingSystem\nname: sys\nqueue: {}\n"
                        "cluster:\n  pools:\n    cpu: {machine: e2-standard-8}\n    a4: {machine: a4-highgpu-8g, nodes: 2}\n"
                        "pipeline:\n  - {name: gpu, image: i, gpus: 8, command: [x]}\n  - {name: cpu, image: i, command: [x]}\n",
                        diags);
  REQUIRE_MESSAGE(sys, diags.render_text());
  // GPUs only on the placed pool: it must ask to be given that flavor.
  CHECK(topology_request(*sys, sys->steps[0]).kind == TopologyRequest::Kind::kUnconstrained);
  // The CPU pool is there for a step without GPUs: it asks nothing (Kueue gives it a flavor without a topology).
  CHECK(topology_request(*sys, sys->steps[1]).kind == TopologyRequest::Kind::kNone);
}

}  // namespace trainc
