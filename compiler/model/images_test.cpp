#include "model/images.h"

#include <doctest/doctest.h>

#include "model/catalog.h"

namespace trainc {

TEST_CASE("an image reference's repository drops the tag, the digest and Docker Hub's prefixes") {
  std::string tag;
  CHECK(image_repository("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime", &tag) == "pytorch/pytorch");
  CHECK(tag == "2.5.1-cuda12.4-cudnn9-runtime");
  CHECK(image_repository("docker.io/library/busybox:1.36", &tag) == "busybox");
  CHECK(image_repository("docker.io/rayproject/ray:2.9.0-gpu@sha256:abc", &tag) == "rayproject/ray");
  CHECK(tag == "2.9.0-gpu");
  CHECK(image_repository("localhost:5000/team/img", &tag) == "localhost:5000/team/img");
  CHECK(tag.empty());
  CHECK(image_repository("nvcr.io/nvidia/tritonserver:26.07-py3") == "nvcr.io/nvidia/tritonserver");
}

TEST_CASE("image references are checked as a registry checks them, before any pattern runs on the tag") {
  for (const char* ok : {"python:3.12-slim", "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime", "localhost:5000/a/b:v1",
                         "us-docker.pkg.dev/my-project/ml/trainrt:0.1.0", "nvcr.io/nvidia/tritonserver:25.01-py3",
                         "ubuntu@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                         "Registry.Example.com/team/app"}) {
    CAPTURE(ok);
    CHECK(image_reference_error(ok).empty());
  }
  const std::string long_tag = "pytorch/pytorch:" + std::string(60000, 'a');
  CHECK(image_reference_error(long_tag).find("60000 characters; a tag has at most 128") != std::string::npos);
  CHECK(image_reference_error("pytorch/pytorch:" + std::string(128, '1')).empty());
  CHECK_FALSE(image_reference_error("pytorch/pytorch:" + std::string(129, '1')).empty());
  // The book answers nothing of it, and quickly: no regex is run on it.
  CHECK_FALSE(image_book().facts(long_tag).has_value());
  CHECK_FALSE(image_reference_bounds_error(long_tag).empty());
  // A spec's image is bounded, not parsed: its characters are quoted wherever it is written.
  CHECK(image_reference_bounds_error("reg.example/img:1$(touch${IFS}x)").empty());
  CHECK_FALSE(image_reference_bounds_error("").empty());
  for (const char* bad : {"", "python:", "python:-x", "Python:3", "a//b", "/a", "a b", "a\x1b]52;c;x\x07", "a@sha256:12",
                          "a@nohash", "a:b@sha256:zz"}) {
    CAPTURE(bad);
    CHECK_FALSE(image_reference_error(bad).empty());
  }
  CHECK_FALSE(image_reference_error(std::string(256, 'a')).empty());
}

TEST_CASE("the facts of a PyTorch image come from its tag: CUDA version, kernels, driver") {
  const auto f = image_book().facts("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime");
  REQUIRE(f);
  CHECK(f->family == "pytorch");
  CHECK(f->cuda == "12.4");
  CHECK(f->uid == 0);
  CHECK(f->lacks.count("aws") == 1);
  CHECK(f->tools.count("torchrun") == 1);
  CHECK(f->runs_on(90) == true);   // H100
  CHECK(f->runs_on(89) == true);   // L4 runs sm_86 kernels (same major, lower minor)
  CHECK(f->runs_on(100) == false);  // B200: no sm_100 kernels and no PTX
  CHECK(f->min_driver == "525.60.13");
  CHECK(image_book().with_kernels_for(*f, 100) == "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime");
  const auto newer = image_book().facts("pytorch/pytorch:2.9.0-cuda13.0-cudnn9-runtime");
  REQUIRE(newer);
  CHECK(newer->cuda == "13.0");
  CHECK(newer->runs_on(100) == true);
  CHECK(newer->runs_on(121) == true);  // through its sm_120 PTX
  CHECK(newer->min_driver == "580.65.06");
  CHECK_FALSE(image_book().facts("us-docker.pkg.dev/p/r/gpt:1.0"));
}

TEST_CASE("images' users: who the process is and which uids have a home") {
  const auto ray = image_book().facts("rayproject/ray:2.9.0-gpu");
  REQUIRE(ray);
  CHECK(ray->uid == 1000);
  CHECK(ray->knows_uid(1000));
  CHECK_FALSE(ray->knows_uid(2000));
  const auto vllm = image_book().facts("vllm/vllm-openai:v0.30.0");
  REQUIRE(vllm);
  CHECK(vllm->uid == 0);
  CHECK_FALSE(vllm->knows_uid(1000));  // vLLM's own image has no user 1000 (vllm #44548)
  CHECK(vllm->cuda == "13");
  CHECK(image_book().facts("vllm/vllm-openai:v0.30.0-cu129")->cuda == "12.9");
  const auto triton = image_book().facts("nvcr.io/nvidia/tritonserver:26.07-py3");
  REQUIRE(triton);
  CHECK(triton->knows_uid(1000));
}

TEST_CASE("drivers compare by their numbers") {
  CHECK(compare_driver("570.133.20", "580.65.06") < 0);
  CHECK(compare_driver("580.65.06", "580.65.06") == 0);
  CHECK(compare_driver("580.100", "580.65.06") > 0);
}

TEST_CASE("every GPU the catalog lets a pool carry has a compute capability") {
  const Catalog& c = catalog();
  for (const auto& name : c.machine_names()) {
    const MachineType& mt = *c.machine(name);
    if (mt.gpus == 0) continue;
    CAPTURE(name);
    CHECK(image_book().compute_capability(mt.accelerator).has_value());
  }
  for (const auto& gpu : c.attachable_gpus()) {
    CAPTURE(gpu.accelerator);
    CHECK(image_book().compute_capability(gpu.accelerator).has_value());
  }
}

}  // namespace trainc
