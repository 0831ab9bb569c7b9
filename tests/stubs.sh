# shellcheck shell=bash
# Logging stand-ins for the tools generated scripts call (sourced by tests/*_test.sh).
#   stubs_install DIR      writes the stand-ins into DIR/bin and keeps their state in DIR/state;
#                          exports STUB_BIN and STUB_STATE (put "$STUB_BIN" first on PATH)
#   stub_calls TOOL        how many times TOOL was called
#   stub_saw TOOL ARG      whether some call of TOOL got ARG as one whole argument
#   stub_log               every call so far, one a line (arguments quoted with printf %q)
#   stub_exists KEY        whether the fake cloud holds KEY (e.g. "container clusters demo")
#
# Every call stores its argv NUL-separated in $STUB_STATE/calls/<seq>-<tool>, so an argument
# holding spaces, quotes or newlines is checked whole, and appends a readable line to
# $STUB_STATE/log.
#
# gcloud is a small fake cloud: `describe` finds what `create` made (printing `name: X`, or with
# --format='value(description)' the --description it was created with) and
# otherwise fails as gcloud does (`ERROR: (gcloud.…) … not found`, exit 1); `create` of what
# exists fails with ALREADY_EXISTS and `delete` of what is missing with NOT_FOUND, so a script
# that is not idempotent fails its second run. A cluster comes with GKE's `default-pool` and
# takes its pools along when deleted. A node pool remembers the flags it was made and updated with:
# `node-pools describe --format=value[separator="|"](FIELDS)` answers GKE's fields from them (with
# GKE's own nvidia.com/gpu taint on a GPU pool), `node-pools update` and `clusters resize` change
# them, and `compute instance-groups managed describe` of its one instance group gives its size
# (see stub_pool_flag); clusters and buckets answer their describe fields the same way, and
# `clusters update` changes a cluster's. A deleted cluster takes what it held along. kubectl is
# tests/kubectl_standin.py: it keeps the applied objects (creation times, the status their
# controllers write: a Job, JobSet or RayJob succeeds at once, fails when STUB_RUN_FAIL, globs on
# its name, matches, runs on when STUB_RUN_HOLD does), refuses an update the update oracle
# (k8s-update-check) refuses, and answers get, wait, rollout and delete as kubectl does;
# `create secret generic` keeps a Secret's key names (never its values), which `get secret/NAME`
# lists, one a line (NotFound for a Secret never made). helm remembers releases. curl answers every request.
#   stub_k8s_objects       every object the cluster holds, as kind.group/namespace/name (core kinds
#                          without .group, cluster-scoped ones with an empty namespace), sorted
#   stub_k8s_started       the Jobs, JobSets and RayJobs apply created (steps started), kind/name
#                          a line, in order; stub_k8s_deleted, stub_k8s_rolled (pod templates
#                          changed), stub_k8s_refused (updates refused), stub_k8s_created (every
#                          object created) and stub_k8s_replaced (deleted, then created again) likewise
#   stub_k8s_finish KIND/NAME complete|failed   ends a workload STUB_RUN_HOLD kept running
#   stub_user_objects OUT  makes what OUT's apply.sh needs and trainc does not make (need_object)
# `storage rsync` copies folders into the fake cloud's objects, which `storage ls` lists.
# `ray-job ENTRYPOINT` runs a RayJob's entrypoint as Ray's job supervisor runs the string KubeRay's
# HTTPMode posts to the job API: subprocess.Popen(entrypoint, shell=True), one `sh -c`.
# The entry scripts' tools: `aws s3 sync` maps s3://B/K to $STUB_S3/B/K; torchrun, trainrt,
# python and python3 only record their arguments (and $TRAINC_RESUME_FROM and their working
# folder), then exit with $STUB_EXIT (default 0).
# Images (self-contained stand-ins, bin/.images): `gcloud builds submit FOLDER --tag
# IMAGE` builds FOLDER/Dockerfile (it fails as gcloud does without one) and `docker buildx build
# --push -f DOCKERFILE -t IMAGE CONTEXT` (after `gcloud auth configure-docker HOST`) pushes IMAGE
# into the fake registry, which `gcloud artifacts docker images describe IMAGE` reads (NOT_FOUND
# otherwise); a push to a repository that was never created fails, and deleting the repository
# deletes its images. `docker buildx version` answers unless STUB_DOCKER=no-buildx. What each
# Cloud Build uploaded is kept: $STUB_STATE/uploads/NAME:TAG.files (its paths) and .Dockerfile.
#   stub_images            the images pushed so far, one a line, sorted
#   stub_user_images OUT   pushes the images OUT's apply.sh checks for that trainc does not build
#   stub_path_without_docker   a PATH holding the stand-ins and /usr/bin:/bin but no docker

STUBS_KUBECTL="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/kubectl_standin.py"

stubs_install() {
  STUB_BIN="$1/bin"
  STUB_STATE="$1/state"
  export STUB_BIN STUB_STATE
  mkdir -p "$STUB_BIN" "$STUB_STATE/calls" "$STUB_STATE/cloud" "$STUB_STATE/k8s" "$STUB_STATE/helm"
  : >"$STUB_STATE/log"

  # Shared by every stand-in: records the call.
  cat >"$STUB_BIN/.record" <<'SH'
# shellcheck shell=bash
stub_record() {
  local tool=$1 seq
  shift
  seq=${EPOCHREALTIME/./}
  printf '%s\0' "$@" >"$STUB_STATE/calls/$seq-$$-$tool"
  { printf '%s' "$tool"; printf ' %q' "$@"; printf '\n'; } >>"$STUB_STATE/log"
}
SH

  cat >"$STUB_BIN/gcloud" <<'SH'
#!/usr/bin/env bash
# shellcheck source=/dev/null
. "${0%/*}/.record"
stub_record gcloud "$@"
set -u
# Images and the registry: a stand-in of their own (.images); a repository takes its images along.
case "${1:-} ${2:-} ${3:-}" in
  "builds submit "* | "auth configure-docker "* | "artifacts docker images") exec "${0%/*}/.images" gcloud "$@" ;;
  "artifacts repositories delete") "${0%/*}/.images" forget "${4:-}" ;;
esac
cloud="$STUB_STATE/cloud"
# Objects: `storage rsync [flags] SRC gs://B/P` copies folder SRC (local, or gs://) to the files
# under $cloud/objects/B/P, and `storage ls` finds them (an object, a folder's objects, or a
# bucket's); what no object matches fails as gcloud does.
if [ "${1:-}" = storage ] && { [ "${2:-}" = rsync ] || [ "${2:-}" = ls ]; }; then
  urls=()
  for a in "${@:3}"; do case "$a" in -*) ;; *) urls+=("$a") ;; esac; done
  at() { case "$1" in gs://*) printf '%s\n' "$cloud/objects/${1#gs://}" ;; *) printf '%s\n' "$1" ;; esac; }
  bucket() { local b=${1#gs://}; printf '%s\n' "${b%%/*}"; }
  if [ "$2" = rsync ]; then
    [ -e "$cloud/storage_buckets_$(bucket "${urls[1]}")" ] ||
      { echo "ERROR: (gcloud.storage.rsync) gs://$(bucket "${urls[1]}") not found: 404." >&2; exit 1; }
    [ -d "$(at "${urls[0]}")" ] || { echo "ERROR: (gcloud.storage.rsync) ${urls[0]} not found" >&2; exit 1; }
    mkdir -p "$(at "${urls[1]}")"
    cp -R "$(at "${urls[0]}")/." "$(at "${urls[1]}")/"
    exit 0
  fi
  o=$(at "${urls[0]}")
  o=${o%/}
  if [ -f "$o" ]; then echo "${urls[0]}"; exit 0; fi
  if [ -d "$o" ] && [ -n "$(find "$o" -type f | head -n 1)" ]; then
    find "$o" -type f | sed "s|^$cloud/objects/|gs://|"
    exit 0
  fi
  # A bucket without objects: as below (STUB_BUCKET_OBJECTS, or nothing).
  if [ "${urls[0]#gs://}" != "$(bucket "${urls[0]}")" ]; then
    echo "ERROR: (gcloud.storage.ls) One or more URLs matched no objects." >&2
    exit 1
  fi
fi
# `storage rm --recursive gs://B` takes B's objects along (and then B, as below).
if [ "${1:-} ${2:-}" = "storage rm" ]; then
  for a in "${@:3}"; do case "$a" in gs://*) b=${a#gs://}; rm -rf "$cloud/objects/${b%%/*}" ;; esac; done
  rmdir "$cloud/objects" 2>/dev/null
fi
# Node pools keep the flags they were made and updated with, one a line (bin/.pools reads and
# changes them): `node-pools describe --format=value[separator="|"](FIELDS)` answers from them the
# fields GKE's API names, `node-pools update` and `clusters resize` change them, and each pool's one
# instance group (gke-CLUSTER_POOL-grp) has --num-nodes as its target size.
case "${1:-} ${2:-} ${3:-}" in
  "container node-pools update" | "container clusters resize" | "container clusters update" | \
    "compute instance-groups managed")
    exec "${0%/*}/.pools" "$@" ;;
esac
# The command group (words before the verb), the verb and its first positional argument.
words=() verb='' name='' cluster=''
for a in "$@"; do
  case "$a" in
    --cluster=*) cluster=${a#--cluster=} ;;
    -*) ;;
    *)
      if [ -z "$verb" ]; then
        case "$a" in
          describe | create | delete | list | enable | get-credentials | add-iam-policy-binding | \
            remove-iam-policy-binding | ls | rm | update) verb=$a ;;
          *) words+=("$a") ;;
        esac
      elif [ -z "$name" ]; then
        name=$a
      fi
      ;;
  esac
done
group="${words[*]}"
case "$group" in
  "iam service-accounts") name=${name%%@*} ;;  # described by e-mail, made by its short name
  "storage buckets") name=${name#gs://} ;;
esac
key="$group $name"
[ -n "$cluster" ] && key="$group $cluster $name"
file=${key//[ \/]/_}
file="$cloud/$file"
command_name="gcloud.${group// /.}.$verb"
not_found() {
  case "$group" in
    "storage buckets") echo "ERROR: ($command_name) gs://$name not found: 404." >&2 ;;
    "compute networks" | "compute networks subnets")
      printf 'ERROR: (%s) Could not fetch resource:\n - The resource '\''%s'\'' was not found\n' "$command_name" "$name" >&2 ;;
    container\ *) echo "ERROR: ($command_name) ResponseError: code=404, message=Not found: $name." >&2 ;;
    *) echo "ERROR: ($command_name) NOT_FOUND: Requested entity was not found." >&2 ;;
  esac
  exit 1
}
case "$group/$verb" in
  "compute regions/describe")
    printf '%s\n' CPUS,10000.0,0.0 N2_CPUS,10000.0,0.0 IN_USE_ADDRESSES,1000.0,0.0 SSD_TOTAL_GB,100000.0,0.0
    exit 0 ;;
  "projects/describe") echo 123456789012; exit 0 ;;
  "services/enable" | */add-iam-policy-binding | */remove-iam-policy-binding)
    echo "Updated IAM policy for $name." >&2; exit 0 ;;
  "container clusters/get-credentials")
    [ -e "$cloud/container_clusters_$name" ] || not_found
    printf 'Fetching cluster endpoint and auth data.\nkubeconfig entry generated for %s.\n' "$name" >&2
    exit 0 ;;
  "storage/ls")
    b=${name#gs://}; b=${b%%/*}
    [ -e "$cloud/storage_buckets_$b" ] || { echo "ERROR: (gcloud.storage.ls) gs://$b not found: 404." >&2; exit 1; }
    [ -n "${STUB_BUCKET_OBJECTS:-}" ] && echo "gs://$b/object#1700000000000000"
    exit 0 ;;
  "storage/rm")
    b=${name#gs://}; b=${b%%/*}
    [ -e "$cloud/storage_buckets_$b" ] || { echo "ERROR: (gcloud.storage.rm) gs://$b not found: 404." >&2; exit 1; }
    rm -f "$cloud/storage_buckets_$b"; exit 0 ;;
  "storage buckets/update")  # e.g. --versioning, where checkpoints live
    b=$name
    [ -e "$cloud/storage_buckets_$b" ] || { echo "ERROR: (gcloud.storage.buckets.update) gs://$b not found: 404." >&2; exit 1; }
    printf '%s\n' "$@" >>"$cloud/storage_buckets_$b"
    echo "Updating gs://$b/..." >&2; exit 0 ;;
  "container node-pools/list")
    for f in "$cloud"/container_node-pools_"${cluster}"_*; do [ -e "$f" ] && echo "${f##*_}"; done
    exit 0 ;;
  "compute networks/describe")
    # A project has its default network unless STUB_NO_DEFAULT_NETWORK is set, as under the
    # organisation policy compute.skipDefaultNetworkCreation.
    [ "$name" = default ] && [ -z "${STUB_NO_DEFAULT_NETWORK:-}" ] && { echo "name: default"; exit 0; }
    [ -e "$file" ] || not_found
    echo "name: $name"; exit 0 ;;
  */describe)
    [ -e "$file" ] || not_found
    case "$group" in
      "container node-pools" | "container clusters")
        for a in "$@"; do case "$a" in --format=value\[separator=*) exec "${0%/*}/.pools" describe "$file" "$@" ;; esac; done ;;
      "storage buckets")  # its location, as GCS names it (in capitals)
        for a in "$@"; do
          [ "$a" = '--format=value(location)' ] && { sed -n 's/^--location=//p' "$file" | tr '[:lower:]' '[:upper:]'; exit 0; }
        done ;;
    esac
    # A service account's description: what `create --description` gave it (the file's text).
    for a in "$@"; do [ "$a" = '--format=value(description)' ] && { cat "$file"; exit 0; }; done
    echo "name: $name"; exit 0 ;;
  */create)
    if [ -e "$file" ]; then echo "ERROR: ($command_name) ALREADY_EXISTS: $name already exists." >&2; exit 1; fi
    : >"$file"
    for a in "$@"; do case "$a" in --description=*) printf '%s\n' "${a#--description=}" >"$file" ;; esac; done
    case "$group" in "container node-pools" | "container clusters" | "storage buckets") printf '%s\n' "$@" >"$file" ;; esac
    [ "$group" = "container clusters" ] && : >"$cloud/container_node-pools_${name}_default-pool"
    echo "Created [$name]." >&2; exit 0 ;;
  */delete)
    [ -e "$file" ] || not_found
    rm -f "$file"
    # A cluster takes its pools, and what was installed in it, along.
    if [ "$group" = "container clusters" ]; then
      rm -f "$cloud/container_node-pools_${name}_"* "$STUB_STATE/helm/"* "$STUB_STATE/k8s/"*
    fi
    echo "Deleted [$name]." >&2; exit 0 ;;
esac
echo "stub gcloud: unexpected call: $*" >&2
exit 3
SH

  # The fake cloud's node pools (gcloud above hands their describe, update and resize here).
  cat >"$STUB_BIN/.pools" <<'SH'
#!/usr/bin/env bash
set -u
cloud="$STUB_STATE/cloud"
# The last value of flag --$2 in pool file $1.
flag() { sed -n "s/^--$2=//p" "$1" | tail -n 1; }
has() { grep -qx -- "--$2" "$1"; }
# Sets flag --$2 of pool file $1 to $3 (or drops it when there is no $3).
set_flag() {
  grep -v -e "^--$2=" -e "^--$2\$" "$1" >"$1.new"
  [ "$#" -ge 3 ] && printf -- '--%s=%s\n' "$2" "$3" >>"$1.new"
  mv "$1.new" "$1"
}
# The API leaves a zero number out.
number() { [ "${1:-0}" != 0 ] && printf '%s\n' "$1"; }
# The pool's taints as the API lists them, key=value:EFFECT a line: GKE's own GPU taint first.
taints() {
  if [ -n "$(flag "$1" accelerator)" ]; then echo 'nvidia.com/gpu=present:NO_SCHEDULE'; fi
  flag "$1" node-taints | tr ',' '\n' | sed -e '/^$/d' -e 's/:NoSchedule$/:NO_SCHEDULE/' \
    -e 's/:PreferNoSchedule$/:PREFER_NO_SCHEDULE/' -e 's/:NoExecute$/:NO_EXECUTE/'
}
# Field $2 of pool file $1 (as GKE's API names it), for the cluster $3, zone $4 and project $5.
value() {
  local f=$1 acc disk v pool=${1##*/container_node-pools_}
  acc=$(flag "$f" accelerator)
  case $2 in
    config.machineType) flag "$f" machine-type ;;
    'config.accelerators[0].acceleratorType') [ -n "$acc" ] && { acc=${acc#type=}; echo "${acc%%,*}"; } ;;
    'config.accelerators[0].acceleratorCount') [ -n "$acc" ] && { acc=${acc#*count=}; echo "${acc%%,*}"; } ;;
    config.diskSizeGb) disk=$(flag "$f" disk-size); echo "${disk:-100}" ;;
    config.spot) has "$f" spot && echo True ;;
    config.flexStart) has "$f" flex-start && echo True ;;
    queuedProvisioning.enabled) has "$f" enable-queued-provisioning && echo True ;;
    config.reservationAffinity.consumeReservationType)
      case $(flag "$f" reservation-affinity) in specific) echo SPECIFIC_RESERVATION ;; none) echo NO_RESERVATION ;; esac ;;
    config.reservationAffinity.values) flag "$f" reservation ;;
    placementPolicy.type) flag "$f" placement-type ;;
    placementPolicy.tpuTopology) flag "$f" tpu-topology ;;
    autoscaling.enabled) has "$f" enable-autoscaling && echo True ;;
    autoscaling.minNodeCount) number "$(flag "$f" min-nodes)" ;;
    autoscaling.maxNodeCount) number "$(flag "$f" max-nodes)" ;;
    autoscaling.totalMinNodeCount) number "$(flag "$f" total-min-nodes)" ;;
    autoscaling.totalMaxNodeCount) number "$(flag "$f" total-max-nodes)" ;;
    config.labels) flag "$f" node-labels | tr ',' '\n' | sed '/^$/d' | LC_ALL=C sort | paste -s -d ';' - ;;
    'config.taints[].key') taints "$f" | sed 's/=.*//' | paste -s -d ';' - ;;
    'config.taints[].value') taints "$f" | sed 's/^[^=]*=//; s/:[^:]*$//' | paste -s -d ';' - ;;
    'config.taints[].effect') taints "$f" | sed 's/.*://' | paste -s -d ';' - ;;
    network) v=$(flag "$f" network); echo "${v:-default}" ;;
    subnetwork) v=$(flag "$f" subnetwork); echo "${v:-default}" ;;
    releaseChannel.channel) v=$(flag "$f" release-channel); printf '%s\n' "${v:-regular}" | tr '[:lower:]' '[:upper:]' ;;
    monitoringConfig.managedPrometheusConfig.enabled) has "$f" enable-managed-prometheus && echo True ;;
    instanceGroupUrls)
      echo "https://www.googleapis.com/compute/v1/projects/$5/zones/$4/instanceGroupManagers/gke-${pool}-grp" ;;
    *) echo "stub gcloud: no node pool field $2" >&2; exit 3 ;;
  esac
}
arg() { local a; for a in "${@:2}"; do case "$a" in "--$1="*) printf '%s\n' "${a#--"$1"=}"; return ;; esac; done; }
case "$1" in
  describe)
    file=$2
    shift 2
    fields=$(arg format "$@")
    fields=${fields#*\(}
    fields=${fields%\)}
    out=''
    IFS=, read -r -a list <<<"$fields"
    for field in "${list[@]}"; do
      out+="$(value "$file" "$field" "$(arg cluster "$@")" "$(arg location "$@")" "$(arg project "$@")")|"
    done
    printf '%s\n' "${out%|}"
    exit 0 ;;
  container)
    if [ "$2 $3" = "clusters update" ]; then  # clusters update CLUSTER --release-channel=C | --enable-managed-prometheus
      file="$cloud/container_clusters_$4"
      [ -f "$file" ] || { echo "ERROR: (gcloud.container.clusters.update) ResponseError: code=404, message=Not found: $4." >&2; exit 1; }
      for a in "${@:5}"; do
        case "$a" in
          --release-channel=*) set_flag "$file" release-channel "${a#*=}" ;;
          --enable-managed-prometheus) set_flag "$file" enable-managed-prometheus; echo "$a" >>"$file" ;;
          --location=* | --project=*) ;;
          *) echo "stub gcloud: unexpected flag $a" >&2; exit 3 ;;
        esac
      done
      echo "Updated [$4]." >&2
      exit 0
    fi
    if [ "$2" = clusters ]; then  # clusters resize CLUSTER --node-pool=P --num-nodes=N
      file="$cloud/container_node-pools_${4}_$(arg node-pool "$@")"
    else  # node-pools update POOL --cluster=C FLAGS
      file="$cloud/container_node-pools_$(arg cluster "$@")_$4"
    fi
    [ -f "$file" ] || { echo "ERROR: (gcloud.container.$2.$3) ResponseError: code=404, message=Not found: ${file##*_}." >&2; exit 1; }
    for a in "${@:5}"; do
      case "$a" in
        --num-nodes=* | --node-labels=* | --node-taints=* | --min-nodes=* | --max-nodes=* | --total-min-nodes=* | --total-max-nodes=*)
          a=${a#--}; set_flag "$file" "${a%%=*}" "${a#*=}" ;;
        --enable-autoscaling) set_flag "$file" enable-autoscaling; echo --enable-autoscaling >>"$file" ;;
        --no-enable-autoscaling)
          for k in enable-autoscaling min-nodes max-nodes total-min-nodes total-max-nodes; do set_flag "$file" "$k"; done ;;
        --cluster=* | --location=* | --project=* | --node-pool=* | --quiet) ;;
        *) echo "stub gcloud: unexpected flag $a" >&2; exit 3 ;;
      esac
    done
    echo "Updated [${file##*_}]." >&2
    exit 0 ;;
  compute)  # instance-groups managed describe gke-CLUSTER_POOL-grp --zone=Z --format=value(targetSize)
    [ "$4" = describe ] || { echo "stub gcloud: unexpected call: $*" >&2; exit 3; }
    name=${5#gke-}
    file="$cloud/container_node-pools_${name%-grp}"
    [ -f "$file" ] || { echo "ERROR: (gcloud.compute.instance-groups.managed.describe) Could not fetch resource: $5 was not found" >&2; exit 1; }
    flag "$file" num-nodes
    exit 0 ;;
esac
echo "stub gcloud: unexpected call: $*" >&2
exit 3
SH
  chmod +x "$STUB_BIN/.pools"

  # kubectl: tests/kubectl_standin.py, a small API server that keeps what was applied (see there).
  cat >"$STUB_BIN/kubectl" <<SH
#!/usr/bin/env bash
# shellcheck source=/dev/null
. "\${0%/*}/.record"
stub_record kubectl "\$@"
exec /usr/bin/python3 -S $(printf '%q' "$STUBS_KUBECTL") "\$@"
SH

  cat >"$STUB_BIN/helm" <<'SH'
#!/usr/bin/env bash
# shellcheck source=/dev/null
. "${0%/*}/.record"
stub_record helm "$@"
set -u
case "$1 ${2:-}" in
  "upgrade --install") : >"$STUB_STATE/helm/$3"; echo "Release \"$3\" has been upgraded. Happy Helming!"; exit 0 ;;
esac
if [ "$1" = uninstall ]; then
  [ -e "$STUB_STATE/helm/$2" ] || { echo "Error: uninstall: Release not loaded: $2: release: not found" >&2; exit 1; }
  rm -f "$STUB_STATE/helm/$2"; echo "release \"$2\" uninstalled"; exit 0
fi
echo "stub helm: unexpected call: $*" >&2
exit 3
SH

  cat >"$STUB_BIN/curl" <<'SH'
#!/usr/bin/env bash
# shellcheck source=/dev/null
. "${0%/*}/.record"
stub_record curl "$@"
case "${*: -1}" in */v1/models) "${0%/*}/.models" ;; esac
# A download (-o FILE, with --create-dirs) gets the same bytes whatever its URL: stub_repin pins them.
out=''
while [ "$#" -gt 0 ]; do [ "$1" = -o ] && out=${2:-}; shift; done
if [ -n "$out" ] && [ "$out" != /dev/null ]; then mkdir -p "$(dirname "$out")"; echo 'stub download' >"$out"; fi
exit 0
SH

  # vLLM's answer to /v1/models: every model a vLLM pod applied so far serves.
  cat >"$STUB_BIN/.models" <<'SH'
#!/usr/bin/env bash
printf '{"object":"list","data":['
sep=
if [ -f "$STUB_STATE/k8s/models" ]; then
  while read -r m; do printf '%s{"id":"%s","object":"model"}' "$sep" "$m"; sep=,; done <"$STUB_STATE/k8s/models"
fi
printf ']}\n'
SH
  chmod +x "$STUB_BIN/.models"

  cat >"$STUB_BIN/aws" <<'SH'
#!/usr/bin/env bash
# aws s3 sync SRC DST [flags]: s3://B/K is the folder $STUB_S3/B/K; aws s3 cp FILE s3://B/K/
# copies FILE into that folder.
# shellcheck source=/dev/null
. "${0%/*}/.record"
stub_record aws "$@"
set -euo pipefail
map() { case "$1" in s3://*) printf '%s\n' "$STUB_S3/${1#s3://}" ;; *) printf '%s\n' "$1" ;; esac; }
if [ "$1" = s3 ] && [ "$2" = cp ] && [ -f "$3" ]; then mkdir -p "$(map "$4")"; cp -a "$3" "$(map "$4")/"; exit 0; fi
[ "$1" = s3 ] && [ "$2" = sync ] || { echo "stub aws: unexpected call: $*" >&2; exit 2; }
src=$(map "$3") dst=$(map "$4")
mkdir -p "$dst"
if [ -d "$src" ]; then cp -a "$src/." "$dst/"; fi
SH

  # The fake registry: an image pushed is a file under $STUB_STATE/images holding its reference.
  mkdir -p "$STUB_STATE/images" "$STUB_STATE/uploads"
  cat >"$STUB_BIN/.images" <<'SH'
#!/usr/bin/env bash
set -u
images="$STUB_STATE/images"
key() { printf '%s' "$images/$(printf '%s' "$1" | tr '/:@' '___')"; }
# push IMAGE: into the fake registry, when its repository (HOST/PROJECT/REPOSITORY/NAME:TAG) exists.
push() {
  local repo
  repo=$(printf '%s' "$1" | cut -d/ -f3)
  if [ ! -e "$STUB_STATE/cloud/artifacts_repositories_$repo" ]; then
    echo "name unknown: Repository \"$repo\" not found" >&2
    return 1
  fi
  printf '%s\n' "$1" >"$(key "$1")"
}
case "$1" in
  forget)  # forget REPOSITORY: its images go with it
    for f in "$images"/*; do
      [ -f "$f" ] && [ "$(cut -d/ -f3 <"$f")" = "$2" ] && rm -f "$f"
    done
    exit 0 ;;
  gcloud) shift ;;
  docker)
    shift
    [ "$1" = buildx ] || { echo "stub docker: unexpected call: $*" >&2; exit 3; }
    if [ "${STUB_DOCKER:-}" = no-buildx ]; then echo "docker: 'buildx' is not a docker command." >&2; exit 1; fi
    [ "$2" = version ] && { echo "github.com/docker/buildx v0.17.1 stub"; exit 0; }
    [ "$2" = build ] || { echo "stub docker: unexpected call: $*" >&2; exit 3; }
    shift 2
    push=0 file='' tag='' context=''
    while [ "$#" -gt 0 ]; do
      case "$1" in
        --push) push=1 ;;
        -f | --file) file=$2; shift ;;
        -t | --tag) tag=$2; shift ;;
        --platform) shift ;;
        -*) echo "stub docker: unexpected flag $1" >&2; exit 3 ;;
        *) context=$1 ;;
      esac
      shift
    done
    [ -d "$context" ] || { echo "ERROR: unable to prepare context: path \"$context\" not found" >&2; exit 1; }
    [ -f "${file:-$context/Dockerfile}" ] || { echo "ERROR: failed to read dockerfile: open $file: no such file or directory" >&2; exit 1; }
    [ "$push" = 1 ] || exit 0
    grep -qx "${tag%%/*}" "$images/.docker-logins" 2>/dev/null ||
      { echo "ERROR: failed to push $tag: denied: Unauthenticated request" >&2; exit 1; }
    push "$tag" || exit 1
    echo "pushed $tag"
    exit 0 ;;
esac
case "$1 $2" in
  "auth configure-docker")
    printf '%s\n' "$3" | tr , '\n' >>"$images/.docker-logins"
    echo "Adding credentials for: $3" >&2
    exit 0 ;;
  "builds submit")
    folder='' tag=''
    shift 2
    while [ "$#" -gt 0 ]; do
      case "$1" in
        --tag=*) tag=${1#--tag=} ;;
        --tag) tag=$2; shift ;;
        -*) ;;
        *) folder=$1 ;;
      esac
      shift
    done
    if [ ! -f "$folder/Dockerfile" ]; then
      echo "ERROR: (gcloud.builds.submit) Invalid value for [source]: Dockerfile required when specifying --tag" >&2
      exit 1
    fi
    # What was uploaded, for the tests: $STUB_STATE/uploads/NAME:TAG.files and .Dockerfile.
    upload="$STUB_STATE/uploads/${tag##*/}"
    (cd "$folder" && find . -mindepth 1 | sort) >"$upload.files"
    cp "$folder/Dockerfile" "$upload.Dockerfile"
    push "$tag" || { echo "ERROR: (gcloud.builds.submit) build failed; see the build log" >&2; exit 1; }
    echo "DONE" ;;
  "artifacts docker")
    [ "$3 $4" = "images describe" ] || { echo "stub gcloud: unexpected call: $*" >&2; exit 3; }
    if [ -f "$(key "$5")" ]; then echo "image_summary:"; echo "  fully_qualified_digest: $5"; exit 0; fi
    echo "ERROR: (gcloud.artifacts.docker.images.describe) NOT_FOUND: Requested entity was not found." >&2
    exit 1 ;;
  *) echo "stub gcloud: unexpected call: $*" >&2; exit 3 ;;
esac
SH
  cat >"$STUB_BIN/docker" <<'SH'
#!/usr/bin/env bash
# shellcheck source=/dev/null
. "${0%/*}/.record"
stub_record docker "$@"
exec "${0%/*}/.images" docker "$@"
SH
  chmod +x "$STUB_BIN/.images"

  # ray-job ENTRYPOINT: what Ray's job supervisor does with the entrypoint KubeRay's HTTPMode posts
  # (dashboard/modules/job/job_supervisor.py): subprocess.Popen(entrypoint, shell=True), one `sh -c`.
  local python
  # The interpreter itself: a pyenv shim would put its own python first on the shell's PATH.
  python=$(python3 -c 'import sys; print(sys.executable)')
  cat >"$STUB_BIN/ray-job" <<SH
#!/usr/bin/env bash
set -euo pipefail
# shellcheck source=/dev/null
. "\${0%/*}/.record"
stub_record ray-job "\$@"
[ "\$#" -eq 1 ] || { echo "stub ray-job: one entrypoint string, not \$#" >&2; exit 2; }
exec '$python' -c 'import subprocess, sys; sys.exit(subprocess.call(sys.argv[1], shell=True))' "\$1"
SH

  # The trainers and launchers: record argv, the resume variable and the working folder.
  local tool
  for tool in torchrun trainrt python python3; do
    cat >"$STUB_BIN/$tool" <<'SH'
#!/usr/bin/env bash
# shellcheck source=/dev/null
. "${0%/*}/.record"
tool=${0##*/}
stub_record "$tool" "$@"
printf '%s\n' "${TRAINC_RESUME_FROM-unset}" >"$STUB_STATE/$tool.resume"
printf '%s\n' "$PWD" >"$STUB_STATE/$tool.cwd"
echo "$tool: started"
exit "${STUB_EXIT:-0}"
SH
  done
  chmod +x "$STUB_BIN"/*
}

stub_calls() {
  local n=0 f
  for f in "$STUB_STATE/calls/"*"-$1"; do [ -e "$f" ] && n=$((n + 1)); done
  echo "$n"
}

stub_saw() {
  local f a
  for f in "$STUB_STATE/calls/"*"-$1"; do
    [ -e "$f" ] || continue
    while IFS= read -r -d '' a; do
      if [ "$a" = "$2" ]; then return 0; fi
    done <"$f"
  done
  return 1
}

# The arguments of the last call of TOOL, one a line (for messages and line-wise checks).
stub_last_args() {
  local f last=
  for f in "$STUB_STATE/calls/"*"-$1"; do [ -e "$f" ] && last=$f; done
  [ -n "$last" ] && tr '\0' '\n' <"$last"
}

stub_log() { cat "$STUB_STATE/log"; }

stub_images() { cat "$STUB_STATE/images/"* 2>/dev/null | sort; }

# stub_user_images OUT: puts into the fake registry every image that scripts/apply.sh of output
# folder OUT checks for and trainc does not build (the user's own images, the trainrt image), as
# their owner would before apply; prints each. The images build.sh makes are left to build.sh.
stub_user_images() {
  local image why
  sed -n "s/^need_image \([^ ]*\) '\(.*\)'\$/\1 \2/p" "$1/scripts/apply.sh" | while read -r image why; do
    case "$why" in *scripts/build.sh*) continue ;; esac
    printf '%s\n' "$image" >"$STUB_STATE/images/$(printf '%s' "$image" | tr '/:@' '___')"
    printf '%s\n' "$image"
  done
}

# A PATH with the stand-ins but without any docker (a copy of $STUB_BIN less docker, then
# /usr/bin:/bin); fails when a docker is there all the same.
stub_path_without_docker() {
  local dir="$STUB_STATE/../bin-without-docker" f
  mkdir -p "$dir"
  for f in "$STUB_BIN"/* "$STUB_BIN"/.[!.]*; do
    [ "${f##*/}" = docker ] || ln -sf "$f" "$dir/"
  done
  if PATH="$dir:/usr/bin:/bin" command -v docker >/dev/null; then echo "docker is in /usr/bin or /bin" >&2; return 1; fi
  printf '%s\n' "$dir:/usr/bin:/bin"
}

# Pins the files scripts/apply.sh of output folder $1 fetches to what the curl stand-in downloads,
# so that their SHA-256 checks pass (an unchanged script stops at the first one).
stub_repin() {
  local sum
  sum=$(echo 'stub download' | sha256sum)
  sed -i -E "/sha256sum --check|pins \(SHA-256/ s/[0-9a-f]{64}/${sum%% *}/g" "$1/scripts/apply.sh"
}

stub_k8s_objects() { /usr/bin/python3 -S "$STUBS_KUBECTL" --objects; }
stub_k8s_started() { /usr/bin/python3 -S "$STUBS_KUBECTL" --events started; }
stub_k8s_deleted() { /usr/bin/python3 -S "$STUBS_KUBECTL" --events deleted; }
stub_k8s_rolled() { /usr/bin/python3 -S "$STUBS_KUBECTL" --events rolled; }
stub_k8s_refused() { /usr/bin/python3 -S "$STUBS_KUBECTL" --events refused; }
stub_k8s_created() { /usr/bin/python3 -S "$STUBS_KUBECTL" --events created; }
stub_k8s_replaced() { /usr/bin/python3 -S "$STUBS_KUBECTL" --events replaced; }
stub_k8s_finish() { /usr/bin/python3 -S "$STUBS_KUBECTL" --finish "$1" "$2"; }

# stub_user_objects OUT: makes the objects scripts/apply.sh of output folder OUT checks for and
# trainc does not create (need_object: a namespace it does not own, a service account), as their
# owner would before apply, with `kubectl create`; prints each. Secrets are left to the tests.
stub_user_objects() {
  local ns ref
  ns=$(sed -n "s/^NAMESPACE=//p" "$1/scripts/apply.sh" | head -n 1)
  ns=${ns#\'} ns=${ns%\'}
  sed -n "s/^need_object '\{0,1\}\([^' ]*\)'\{0,1\} .*/\1/p" "$1/scripts/apply.sh" | while read -r ref; do
    PATH="$STUB_BIN:$PATH" kubectl get "$ref" -n "$ns" -o name >/dev/null 2>&1 && continue
    PATH="$STUB_BIN:$PATH" kubectl create "${ref%%/*}" "${ref#*/}" -n "$ns" >/dev/null || return 1
    printf '%s\n' "$ref"
  done
}

# stub_pool_flag CLUSTER POOL FLAG: the value of --FLAG node pool POOL of CLUSTER has now (made or
# updated with); "" when it has none.
stub_pool_flag() { sed -n "s/^--$3=//p" "$STUB_STATE/cloud/container_node-pools_$1_$2" | tail -n 1; }

stub_exists() { [ -e "$STUB_STATE/cloud/$(printf '%s' "$1" | tr ' /' '__')" ]; }

# Forgets the calls (not the fake cloud's state).
stub_reset_calls() {
  rm -f "$STUB_STATE/calls/"*
  : >"$STUB_STATE/log"
}

# stub_entry_script CONFIGMAP OUT ROOT: writes the entry script that CONFIGMAP (a compiled
# k8s/*-configmap.yaml) holds to OUT, with its pod root (TRAINC_POD_ROOT, the prefix of every
# absolute path it names) set to ROOT, so that running it writes nothing outside ROOT. trainrt's
# own arguments name the stores' mounts (/mnt, /data): those are moved under ROOT by prefixing
# them. The `cd` into the working folder first makes it, as the container runtime does for the
# pod's workingDir.
stub_entry_script() {
  awk '/^  entrypoint.sh: \|/ { on = 1; next } on && /^[^ ]/ { on = 0 } on { sub(/^    /, ""); print }' "$1" |
    sed -E -e "1a export TRAINC_POD_ROOT='$3'" -e "s#(^|[ '=(])/(mnt|data)([/ '\"]|\$)#\\1$3/\\2\\3#g" \
      -e 's#^cd (.*)$#mkdir -p \1 \&\& cd \1#' >"$2"
  [ -s "$2" ] || { echo "no entrypoint.sh in $1"; return 1; }
}

# stub_gib ROOT: the gIB plugin's NCCL settings as an RDMA node's installer leaves them, under
# ROOT/usr/local/gib; sourcing them sets NCCL_NET=gIB and leaves ROOT/usr/local/gib/sourced.
stub_gib() {
  mkdir -p "$1/usr/local/gib/scripts"
  printf '%s\n' '# Stand-in for the gIB plugin'"'"'s set_nccl_env.sh.' 'export NCCL_NET=gIB' \
    "touch '$1/usr/local/gib/sourced'" >"$1/usr/local/gib/scripts/set_nccl_env.sh"
}

# stub_run_in_sandbox SECONDS CMD...: runs CMD in $SANDBOX as a pod would see it (the stand-ins
# first on PATH, HOME and TMPDIR in the sandbox, a two-node rendezvous, S3 under $SANDBOX/bucket),
# for at most SECONDS; sets rc and leaves its output in $TMP/stdout and $TMP/stderr.
stub_run_in_sandbox() {
  local seconds=$1
  shift
  rc=0
  (cd "$SANDBOX" && env PATH="$STUB_BIN:$PATH" HOME="$SANDBOX/home" TMPDIR="$SANDBOX/tmp" \
    HEALTH_ATTEMPTS=1 HEALTH_DELAY=0 NNODES=2 NODE_RANK=0 MASTER_ADDR=master.test MASTER_PORT=29500 TRAINC_RUN=stand-in-run \
    STUB_S3="$SANDBOX/bucket" timeout "$seconds" "$@") >"$TMP/stdout" 2>"$TMP/stderr" || rc=$?
}

# lint_scripts FILE...: bash -n on each, then shellcheck (warnings and worse) on all of them.
lint_scripts() {
  local f rc=0
  for f in "$@"; do
    bash -n "$f" || rc=1
  done
  if ! command -v shellcheck >/dev/null; then echo "shellcheck is not installed: only bash -n ran"; return "$rc"; fi
  shellcheck -S warning -f gcc "$@" || rc=1
  return "$rc"
}
