#pragma once
// What the container images a spec names hold (stdlib/images.yaml, embedded): the user and home
// the process gets, the tools on PATH, the CUDA build, the GPU architectures it has kernels for and
// the oldest driver that runs it. An image no family matches is unknown: no fact, no judgement.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace trainc {

/// The facts of one image reference, its family's merged with its tag's row.
struct ImageFacts {
  std::string family, repository, tag, source;
  std::string user;            ///< "" = unknown
  std::optional<int> uid;      ///< the image's USER
  std::string home;            ///< the USER's home
  std::map<int, std::string> users;  ///< every uid with a passwd entry (root and USER included) -> its home
  std::set<std::string> tools, lacks;
  std::string cuda;            ///< "12.8", "13" (any 13.x), "" = unknown or none
  std::vector<int> archs;      ///< compute capabilities with native kernels (sm_XY as XY); empty = unknown
  std::optional<int> ptx;      ///< the newest architecture also shipped as PTX
  std::string min_driver;      ///< "" = unknown

  /// Whether the image's /etc/passwd names `uid`.
  bool knows_uid(int uid) const { return users.count(uid) > 0; }
  /// Whether the image is known to have kernels for compute capability `cc` (nullopt = unknown).
  std::optional<bool> runs_on(int cc) const;
  /// "sm_50, sm_60, ... sm_90" (and "+PTX sm_120").
  std::string arch_list() const;
};

/// Why `reference` is not an image reference as the OCI distribution spec and Docker's reference
/// grammar write one ("" when it is): a name of at most 255 characters in '/'-separated components
/// (a registry host[:port] first), a tag of at most 128 characters from [A-Za-z0-9_.-] not starting
/// with '.' or '-', a digest ALGORITHM:HEX. Checked before any pattern is matched against it.
std::string image_reference_error(const std::string& reference);
/// The part of image_reference_error that bounds what a pattern is matched against: an empty
/// reference, a name over 255 characters or a tag over 128 ("" when within). A spec's image is
/// judged by this alone (its characters are quoted wherever it is written); `explain --image` by
/// the whole grammar.
std::string image_reference_bounds_error(const std::string& reference);

/// The repository of an image reference, without tag or digest and without docker.io/ or
/// docker.io/library/; `tag` gets the tag ("" when the reference has none).
std::string image_repository(const std::string& reference, std::string* tag = nullptr);

/// A tool trainc brings into a pod (images.yaml `injected`): an init container of `image` copies the
/// folder `copy` to <tools folder>/`bin`, which holds the program `name`.
struct InjectedTool {
  std::string name, image, copy, bin, cpu, memory, source;
};

class ImageBook {
 public:
  /// Parses images YAML; throws std::runtime_error naming the row on malformed data.
  static ImageBook parse(const std::string& yaml_text);
  /// The facts of `reference`, or nullopt when no family names its repository.
  std::optional<ImageFacts> facts(const std::string& reference) const;
  /// The oldest driver that runs CUDA `cuda` ("12.8" or "12"); "" when unknown.
  std::string cuda_driver(const std::string& cuda) const;
  /// The driver GKE installs for gpu-driver-version=latest, as the newest source trainc has says.
  const std::string& gke_latest_driver() const { return gke_latest_; }
  const std::string& gke_latest_source() const { return gke_latest_source_; }
  /// An image of the same family with native kernels for `cc` ("" when the family names none).
  std::string with_kernels_for(const ImageFacts& f, int cc) const;
  /// An image of the same family that runs on driver `driver` ("" when the family names none).
  std::string runs_on_driver(const ImageFacts& f, const std::string& driver) const;
  /// The tool `name` trainc can bring into a pod; nullptr when it brings none of that name.
  const InjectedTool* injected(const std::string& name) const;
  /// The compute capability (sm_XY as XY) of GKE accelerator `accelerator`; nullopt when unknown.
  std::optional<int> compute_capability(const std::string& accelerator) const;

 private:
  struct Row {
    std::string match, cuda, min_driver, example;
    std::vector<int> archs;
    std::optional<int> ptx;
  };
  struct Family {
    ImageFacts base;
    std::vector<Row> rows;
  };
  std::vector<Family> families_;
  std::map<std::string, std::string> cuda_drivers_;  ///< CUDA major -> driver
  std::string gke_latest_, gke_latest_source_;
  std::map<std::string, int> capabilities_;
  std::map<std::string, InjectedTool> injected_;
};

/// The embedded image facts, parsed once.
const ImageBook& image_book();

struct System;
struct Step;
/// The tools trainc brings into `step`'s pods: the AWS CLI when the entry script syncs with S3 and
/// the image is not known to have `aws` on PATH.
std::vector<const InjectedTool*> injected_tools(const System& sys, const Step& step);

/// Compares NVIDIA driver versions ("570.133.20" < "580.65.06"); negative, zero or positive.
int compare_driver(const std::string& a, const std::string& b);

}  // namespace trainc
