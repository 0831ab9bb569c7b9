// README.md: the generated runbook — what was generated, apply order, how to watch, teardown.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/overloaded.h"
#include "emit/ci.h"
#include "emit/contents.h"
#include "commands/command.h"
#include "emit/emit_scripts.h"
#include "emit/emitter.h"
#include "emit/runbook.h"
#include "k8s/clusters.h"
#include "k8s/names.h"
#include "k8s/services.h"
#include "k8s/pod.h"
#include "k8s/prerequisites.h"
#include "k8s/queue.h"
#include "quoting/shell.h"
#include "inspect/graph.h"
#include "inspect/plan.h"
#include "model/catalog.h"
#include "model/images.h"

namespace trainc {
namespace {

/// A kubectl command as inline code, for prose.
std::string kubectl_code(std::initializer_list<std::string_view> literals) {
  return "`" + cmd::kubectl(runbook_target(), literals).line() + "`";
}

/// What a file of the output folder is, for the table at the top.
std::string describe(const k8s::Plan& plan, const std::string& path) {
  if (path == "model.yaml") return "the lowered model (every default applied)";
  if (path.starts_with("terraform/")) return "Terraform (google provider)";
  if (path.starts_with("scripts/")) return "gcloud/kubectl script (`--dry-run` prints the commands)";
  if (path.starts_with("ci/.github/workflows/")) return "GitHub Actions workflow (copy to `.github/workflows/`)";
  if (path.starts_with("ci/cloudbuild.")) return "Cloud Build config";
  if (path.starts_with("docker/")) return "Dockerfile of the trainrt image (build context: the trainc source tree)";
  if (path.starts_with(".")) return "the list of files trainc generated here";
  if (path == "graph.svg") return "the picture of the system below (`trainc graph`)";
  if (path == plan.kustomization) return "Kustomization";
  if (const k8s::Object* o = plan.object_in(path)) return o->kind;
  return "";
}

/// The network the cluster joins when trainc does not make it, and the nodes' own service account
/// with its roles.
std::string node_account_notes(const System& sys) {
  const Gcp& g = *sys.gcp;
  std::string md;
  if (!g.network)
    md += "The cluster joins the project's `default` network, which projects under the organisation policy "
          "`compute.skipDefaultNetworkCreation` do not have: `scripts/up.sh` and `terraform plan` stop first when it "
          "is missing. Add `gcp.network` to the spec for a network trainc creates, or create `default`.\n\n";
  const NodeAccount nodes = node_account(sys);
  md += fmt::format("The nodes run as their own service account `{}`, not the Compute Engine default one (whose "
                    "automatic Editor role organisations may block): it holds `roles/container.defaultNodeServiceAccount` "
                    "on the project (logs and metrics) and nothing else project-wide. Tearing down deletes it.",
                    nodes.email(g));
  std::vector<std::string> repos, elsewhere;
  for (const PulledRepository& r : nodes.repositories) {
    repos.push_back(fmt::format("`{}/{}/{}`", r.host(), r.project, r.repository));
    if (r.project != g.project) elsewhere.push_back(fmt::format("`{}` (project `{}`)", r.repository, r.project));
  }
  if (!repos.empty())
    md += fmt::format(" To pull the pods' images it gets `roles/artifactregistry.reader` on each repository they come "
                      "from, and no other: {}.",
                      fmt::join(repos, ", "));
  if (!elsewhere.empty())
    md += fmt::format(" Granting read on {} needs the right to set that repository's IAM policy in its project "
                      "(`roles/artifactregistry.admin` there, or its owner grants it).",
                      fmt::join(elsewhere, ", "));
  return md + "\n\n";
}

/// What the infrastructure section says besides how to run Terraform and up.sh: the state
/// bucket to make first, the APIs, the network and the image repository.
std::string infrastructure_notes(const System& sys) {
  const Gcp& g = *sys.gcp;
  std::string md;
  if (g.state) {
    md += fmt::format(
        "Terraform keeps its state in `gs://{}/{}` (`backend \"gcs\"` in `terraform/versions.tf`). trainc neither "
        "creates nor deletes that bucket, and it must exist before `terraform init`; make it once, with uniform "
        "bucket-level access and object versioning on (old states stay recoverable):\n\n```sh\n",
        g.state->bucket, g.state->prefix);
    for (const auto& c : cmd::state_bucket(g)) md += c.line() + "\n";
    md += "```\n\n";
  }
  std::vector<std::string> apis;
  for (const GcpApi& api : gcp_apis(sys)) apis.push_back(fmt::format("`{}`", api.service));
  md += fmt::format("Both paths first enable the Google APIs the system uses ({}); destroying leaves them "
                    "enabled.\n\n",
                    fmt::join(apis, ", "));
  if (const auto& n = g.network) {
    if (n->create)
      md += fmt::format("The cluster is VPC-native on network `{}`, subnet `{}` in {} (nodes {}, pods from the "
                        "secondary range `{}` {}, Services from `{}` {}). trainc creates the network and subnet, and "
                        "deletes them after the cluster.\n\n",
                        n->name, n->subnet, g.region, n->cidr, n->pods_range(), n->pods, n->services_range(),
                        n->services);
    else
      md += fmt::format("The cluster is VPC-native on the existing network `{}`, subnet `{}` in {}, which must have "
                        "the secondary ranges `{}` (pods) and `{}` (Services); trainc neither creates nor deletes "
                        "them.\n\n",
                        n->name, n->subnet, g.region, n->pods_range(), n->services_range());
  }
  if (const auto& r = g.registry) {
    md += fmt::format("Built images are pushed to `{}/{}/{}` (Artifact Registry). ", r->host(), g.project, r->repository);
    md += r->create ? "trainc creates the repository; tearing down deletes it with every image in it.\n\n"
                    : "The repository exists already (`create: false`); trainc neither creates nor deletes it.\n\n";
  }
  md += node_account_notes(sys);
  return md;
}

/// For each `command` step on many nodes: the environment its pods get, and two launchers using it.
std::string multi_node_section(const System& sys) {
  std::string md;
  for (const auto& st : sys.steps) {
    const Pool* pool = sys.pool(st.pool);
    if (!st.command_line() || !st.distributed() || (pool && pool->tpu)) continue;
    if (md.empty()) md = "## Commands on many nodes\n\n";
    md += fmt::format(
        "Step `{}` runs its command in {} pods, one per node, of a JobSet, which restarts them all when one fails; "
        "they find each other through its headless Service `{}` (its addresses are published before the pods are "
        "ready). Every pod gets:\n\n"
        "| variable | value |\n|---|---|\n"
        "| `NNODES` | {} |\n"
        "| `NODE_RANK` | the pod's index, 0 to {} (its Job's completion index) |\n"
        "| `MASTER_ADDR` | `{}`, the stable name of pod 0 |\n"
        "| `MASTER_PORT` | {}, open on every pod |\n"
        "| `NODE_HOSTS` | every pod's stable name in rank order, comma-separated |\n\n",
        st.name, st.nodes, k8s::job_name(sys, st), st.nodes, st.nodes - 1, k8s::master_addr(sys, st),
        rendezvous_port(st.run));
    md += R"(JAX:

```python
import os, jax
jax.distributed.initialize(
    coordinator_address=f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
    num_processes=int(os.environ["NNODES"]), process_id=int(os.environ["NODE_RANK"]))
```

Hugging Face Accelerate:

```sh
accelerate launch --num_machines "$NNODES" --machine_rank "$NODE_RANK" \
  --main_process_ip "$MASTER_ADDR" --main_process_port "$MASTER_PORT" train.py
```

An MPI-style hostfile, one host per line: `tr ',' '\n' <<<"$NODE_HOSTS" >hostfile`.

)";
  }
  return md;
}

/// A `kubectl scale` of a Dask worker group that its pool can hold: one pod more when there is room
/// for it beside the rest of the system, else fewer (as many as fit, below the spec's count); ""
/// when neither is possible.
std::string scale_example(const LongLivedLoad& load, const System& sys, const ComputeCluster& c, const PodGroup& g) {
  const std::optional<int> most = group_capacity(load, sys, c, g);
  const bool grow = !most || g.replicas < *most;
  const int to = grow ? g.replicas + 1 : std::min(g.replicas - 1, *most);
  if (to < 0 || to == g.replicas) return "";
  const std::string where = g.pool.empty() ? "the pools hold" : fmt::format("pool '{}' holds", g.pool);
  std::string note = fmt::format("worker group '{}', {} pod{} now", g.name, g.replicas, g.replicas == 1 ? "" : "s");
  if (most)
    note += grow ? fmt::format("; {} up to {}", where, *most) : fmt::format("; {} no more", where);
  const std::string deployment = "deployment/" + k8s::worker_group_name(sys, c, g);
  return cmd::kubectl(runbook_target(), {"scale", "-n", sys.ns, deployment, fmt::format("--replicas={}", to)}).line() +
         "   # " + note + "\n";
}

/// How to reach, scale and follow each long-lived cluster.
std::string clusters_section(const System& sys, const k8s::Plan& plan) {
  if (plan.clusters.empty()) return "";
  std::string md = "## Clusters\n\n";
  const std::string& ns = sys.ns;
  const KubeTarget kube = runbook_target();
  const LongLivedLoad load(sys);
  for (const auto& w : plan.clusters) {
    const ComputeCluster& c = *w.cluster;
    const std::string base = k8s::cluster_name(sys, c);
    md += match(
        c.engine,
        [&](const Ray&) {
          std::string s = fmt::format(
              "Ray cluster `{}`: its dashboard and job API are on the head's port 8265 (the recipe forwarded 8625 "
              "by mistake). Submit work with `ray job submit` as an alternative to a step:\n\n```sh\n",
              c.name);
          s += cmd::port_forward(kube, ns, k8s::ray_head_service(sys, c), {"8265:8265"}).line() + "\n";
          s += "ray job submit --address http://localhost:8265 -- python my_script.py\n";
          s += cmd::kubectl(kube, {"get", "raycluster", "-n", ns, base}).line() + "\n";
          for (const auto& g : c.workers)
            if (g.autoscaled())
              s += fmt::format("# worker group '{}' scales between {} and {} pods with the load\n", g.name, g.min, g.max);
          return s + "```\n\n";
        },
        [&](const Dask&) {
          std::string s = fmt::format(
              "Dask cluster `{}`: clients reach the scheduler at `{}`; its dashboard is on port 8787.\n\n```sh\n", c.name,
              k8s::dask_scheduler_address(sys, c));
          const std::string scheduler = k8s::dask_scheduler_name(sys, c);
          s += cmd::port_forward(kube, ns, scheduler, {"8787:8787"}).line() + "\n";
          for (const auto& g : c.workers) s += scale_example(load, sys, c, g);
          s += cmd::kubectl(kube, {"logs", "-n", ns, "deployment/" + scheduler}).line() + "\n";
          return s + "```\n\nA finished client's output stays in its Job's logs (" +
                 kubectl_code({"logs", "-n", ns, "job/NAME"}) + "). `kubectl scale` lasts until the next apply, which sets the spec's replicas again; more "
                 "workers than the pool holds beside the rest of the system stay Pending: raise the pool's size in the "
                 "spec first.\n\n";
        });
  }
  return md;
}

/// How to call, watch, scale and roll back a vLLM service.
std::string vllm_service(const System& sys, const Service& s, const Vllm& v, const std::string& outage) {
  const std::string& ns = sys.ns;
  const std::string name = k8s::service_name(sys, s);
  std::string out =
      v.weights.url.empty()
          ? fmt::format("vLLM serves `{}` from Hugging Face{}, downloaded when a pod starts{}, as `{}`", v.model,
                        v.revision.empty() ? "" : fmt::format(" (revision `{}`)", v.revision),
                        s.secret_env.count("HF_TOKEN")
                            ? fmt::format(" with the token in Secret `{}` (key `{}`)", s.secret_env.at("HF_TOKEN").secret,
                                          s.secret_env.at("HF_TOKEN").key)
                            : "",
                        v.served_name)
          : fmt::format("vLLM streams the weights in `{}` to the GPUs when a pod starts (Run:ai Model Streamer), read "
                        "with the service's own Google service account `{}`, which may only read that bucket, and serves "
                        "them as `{}`",
                        v.weights.url, s.identity.gsa, v.served_name);
  out += fmt::format(", split over {} GPU(s) per pod. Requests name that model in their `\"model\"` field.\n\n",
                     v.tensor_parallel);
  const std::string body = fmt::format(
      R"({{"model": "{}", "messages": [{{"role": "user", "content": "Say hello."}}], "max_tokens": 64}})", v.served_name);
  auto calls = [&](const std::string& base, const std::string& host) {
    CommandLine chat = cmd::curl(base + "/v1/chat/completions", host);
    chat.opt("-H", "Content-Type: application/json").next_line().opt("-d", body);
    return cmd::curl(base + "/v1/models", host).line() + "\n" + chat.line() + "\n";
  };
  if (s.expose.gateway) {
    const std::string host = s.expose.hosts.front() == "*" ? "" : s.expose.hosts.front();
    out += fmt::format("Call its OpenAI-compatible API from outside the cluster{} (any OpenAI client works with base "
                       "URL `http://$GATEWAY_IP{}/v1`):\n\n```sh\n{}```\n\n",
                       s.expose.path_prefix.empty() ? "" : fmt::format(" under `{}` (the gateway strips the prefix)",
                                                                       s.expose.path_prefix),
                       s.expose.path_prefix, calls("http://$GATEWAY_IP" + s.expose.path_prefix, host));
    if (!host.empty())
      out += fmt::format("The gateway routes only the hosts {} to it: point DNS at `$GATEWAY_IP`, or send the "
                         "`Host` header as above.\n\n",
                         fmt::format("`{}`", fmt::join(s.expose.hosts, "`, `")));
  } else {
    out += fmt::format("It is reachable inside the cluster at `http://{}.{}.svc:8000/v1` (the OpenAI-compatible API). "
                       "From a workstation:\n\n```sh\n{}\n{}```\n\n",
                       name, ns, cmd::port_forward(runbook_target(), ns, name, {"8000:8000"}).line(),
                       calls("http://localhost:8000", ""));
  }
  out += fmt::format(
      "**Dashboards.** Managed Service for Prometheus scrapes `/metrics` on port 8000 every 15s (PodMonitoring `{0}`). "
      "In Cloud Monitoring's Metrics Explorer (PromQL), e.g. requests per second, the queue, and the 95th percentile "
      "of the time to the first token:\n\n```\n"
      "sum(rate(vllm:request_success_total{{namespace=\"{1}\"}}[5m]))\n"
      "sum(vllm:num_requests_waiting{{namespace=\"{1}\"}})\n"
      "histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{{namespace=\"{1}\"}}[5m])))\n"
      "```\n\n",
      name, ns);
  if (s.autoscaled())
    out += fmt::format("**Scaling.** The HorizontalPodAutoscaler keeps {} to {} pods, adding pods while more than {} "
                       "requests per pod wait in vLLM's queue (`vllm:num_requests_waiting`, served to the HPA by the "
                       "Custom Metrics Stackdriver Adapter as `{}`). {} shows what it "
                       "sees; change the bounds in the spec.\n\n",
                       s.min, s.max, s.pending_requests, s.scaling_metric().adapter_name,
                       kubectl_code({"describe", "hpa", "-n", ns, name}));
  else
    out += fmt::format("**Scaling.** {} pod(s), fixed; set `autoscaling: {{min, max}}` in the spec to scale on the "
                       "request queue.\n\n",
                       s.replicas);
  out += fmt::format(
      "**New models and rollback.** vLLM loads the weights when a pod starts, which may take up to the startup probe's "
      "{} minutes; the Deployment's progress deadline ({} minutes: that window and time for the node and the image "
      "pull) is when a rollout counts as failed, and `scripts/apply.sh` waits that long. To serve another model or "
      "revision, change the spec and apply it: a rolling update replaces the pods{}. To roll "
      "back, {} until the spec is fixed and applied again.\n\n",
      (s.startup_seconds + 59) / 60, (k8s::rollout_timing(s).progress_deadline + 59) / 60,
      outage.empty() ? " while the others serve" : ", but at one replica " + outage,
      kubectl_code({"rollout", "undo", "-n", ns, "deployment/" + name}));
  return out;
}

/// How to call, watch, scale and roll back each service.
std::string services_section(const System& sys, const k8s::Plan& plan) {
  if (plan.services.empty()) return "";
  const std::string& ns = sys.ns;
  const Operator& gw = catalog().istio_gateway();
  std::string md = "## Services\n\n";
  if (sys.uses_gateway()) {
    std::vector<std::string> apis;
    for (const auto& [_, s] : sys.services)
      if (s.expose.gateway) {
        std::string api = match(
            s.server,
            [](const Triton&) {
              return std::string("HTTP/REST under `/v2` and gRPC (`inference.GRPCInferenceService`) on the same port");
            },
            [](const Vllm&) { return std::string("vLLM's OpenAI-compatible API under `/v1/`"); });
        if (std::find(apis.begin(), apis.end(), api) == apis.end()) apis.push_back(std::move(api));
      }
    md += fmt::format("Exposed services answer on the Istio ingress gateway's external IP, port 80: {}. "
                      "`scripts/health.sh` finds the address and asks every service and model whether it is ready."
                      "\n\n```sh\nGATEWAY_IP=$({})\n```\n\n",
                      fmt::join(apis, "; "), cmd::load_balancer_ip(runbook_target(), gw.release, gw.ns).line());
    std::vector<std::string> open, any_host;
    for (const auto& [name, s] : sys.services)
      if (s.expose.gateway) {
        open.push_back(fmt::format("`{}`", name));
        if (std::find(s.expose.hosts.begin(), s.expose.hosts.end(), "*") != s.expose.hosts.end())
          any_host.push_back(fmt::format("`{}`", name));
      }
    md += fmt::format("**Who can call them.** The gateway is a public load balancer: plain HTTP on port 80, no TLS, "
                      "and trainc adds no authentication, so anyone who finds the address can call {}. {}Before real traffic, restrict it: an Istio `AuthorizationPolicy` (or "
                      "`RequestAuthentication` with JWTs) on the gateway, or `loadBalancerSourceRanges` on its Service.\n\n",
                      fmt::join(open, ", "),
                      any_host.empty() ? ""
                                       : fmt::format("{} answer{} any host name (`hosts` is `*`, the default), so the "
                                                     "bare IP reaches {}. ",
                                                     fmt::join(any_host, ", "), any_host.size() == 1 ? "s" : "",
                                                     any_host.size() == 1 ? "it" : "them"));
  }
  for (const auto& w : plan.services) {
    const Service& s = *w.service;
    const std::string name = k8s::service_name(sys, s);
    md += fmt::format("### `{}` ({})\n\n", s.name, s.kind());
    md += match(
        s.server, [&](const Vllm& v) { return vllm_service(sys, s, v, k8s::roll_outage(w)); },
        [&](const Triton& t) {
      std::string out = fmt::format(
          "Triton serves the model repository `{}` (one folder per model, each with `config.pbtxt` and numbered "
          "version folders), read with the service's own Google service account `{}`, which may only read that "
          "bucket.\n\n",
          t.repository.url, s.identity.gsa);
      const CallingExamples calls = s.calling_examples();
      if (s.expose.gateway && !s.expose.path_prefix.empty()) {
        const std::string host = s.expose.hosts.front() == "*" ? "" : s.expose.hosts.front();
        out += fmt::format("Call its HTTP API under `{}` on the gateway (the gateway strips the prefix; gRPC is not "
                           "routed to a prefixed service):\n\n```sh\n{}\n```\n\n",
                           s.expose.path_prefix,
                           cmd::curl("http://$GATEWAY_IP" + s.expose.path_prefix + calls.ready_path, host).line());
      } else if (s.expose.gateway) {
        const std::string host = s.expose.hosts.front() == "*" ? "" : s.expose.hosts.front();
        out += fmt::format("Call it from outside the cluster{}:\n\n```sh\n{}\n",
                           calls.client ? ", " + calls.client->how : "",
                           cmd::curl("http://$GATEWAY_IP" + calls.ready_path, host).line());
        if (calls.client)
          out += fmt::format("docker run --rm --net=host {} \\\n  {}\n", sh_quote(calls.client->image),
                             fmt::join(calls.client->argv, " "));
        out += "```\n\n";
        if (!host.empty())
          out += fmt::format("The gateway routes only the hosts {} to it: point DNS at `$GATEWAY_IP`, or send the "
                             "`Host` header as above.\n\n",
                             fmt::format("`{}`", fmt::join(s.expose.hosts, "`, `")));
      } else {
        out += fmt::format("It is reachable inside the cluster at `http://{}.{}.svc:8000` (gRPC on 8001). From a "
                           "workstation:\n\n```sh\n{}\n{}\n```\n\n",
                           name, ns, cmd::port_forward(runbook_target(), ns, name, {"8000:8000", "8001:8001"}).line(),
                           cmd::curl("http://localhost:8000" + calls.ready_path, "").line());
      }
      out += fmt::format(
          "**Dashboards.** Managed Service for Prometheus scrapes port 8002 every 15s (PodMonitoring `{}`). In Cloud "
          "Monitoring's Metrics Explorer (PromQL), e.g. requests per second and queue time per request:\n\n```\n"
          "sum by (model) (rate(nv_inference_request_success{{namespace=\"{}\"}}[5m]))\n"
          "sum(rate(nv_inference_queue_duration_us{{namespace=\"{}\"}}[5m])) / "
          "sum(rate(nv_inference_request_success{{namespace=\"{}\"}}[5m]))\n```\n\n",
          name, ns, ns, ns);
      if (s.autoscaled())
        out += fmt::format("**Scaling.** The HorizontalPodAutoscaler keeps {} to {} pods, adding pods while more than "
                           "{} requests per pod wait in {} (`{}`, served "
                           "to the HPA by the Custom Metrics Stackdriver Adapter). {} "
                           "shows what it sees; change the bounds in the spec.\n\n",
                           s.min, s.max, s.pending_requests, s.scaling_metric().measures, s.scaling_metric().name,
                           kubectl_code({"describe", "hpa", "-n", ns, name}));
      else
        out += fmt::format("**Scaling.** {} pod(s), fixed; set `autoscaling: {{min, max}}` in the spec to scale on "
                           "the request queue.\n\n",
                           s.replicas);
      out += fmt::format(
          "**New model versions and rollback.** Triton loads the repository when a pod starts. After copying a new "
          "version folder into the bucket, roll the pods: {}. To roll "
          "back a model, remove (or stop listing in `version_policy`) the newer version folder and restart the same "
          "way; to roll back a change of the server itself (image, flags), {} until the spec is fixed and applied "
          "again.\n\n",
          kubectl_code({"rollout", "restart", "-n", ns, "deployment/" + name}),
          kubectl_code({"rollout", "undo", "-n", ns, "deployment/" + name}));
      if (const std::string outage = k8s::roll_outage(w); !outage.empty())
        out += fmt::format("**A roll is an outage at one replica**: {}.\n\n", outage);
      return out;
        });
  }
  return md;
}

/// The title, and the table of every file the other emitters wrote.
std::string files_section(const System& sys, const k8s::Plan& plan, const OutputSink& out) {
  std::string md = fmt::format("<!-- {} -->\n# {}: runbook\n\n", kGeneratedNotice, sys.name);
  md += fmt::format("Generated by trainc from the spec of system `{}`. Everything here is reproducible: "
                    "change the spec, run `trainc compile`, and commit the result; `trainc diff` tells "
                    "whether this folder is up to date.\n\n",
                    sys.name);
  md += "## What is here\n\n| file | kind |\n|---|---|\n";
  for (const auto& [path, content] : out.files()) md += fmt::format("| `{}` | {} |\n", path, describe(plan, path));
  return md + "| `README.md` | this runbook |\n\n";
}

/// The picture of the system, or why it is left out.
std::string system_section(const System& sys, const Planned& plan, const OutputSink& out) {
  if (out.files().count("graph.svg"))
    return fmt::format("## The system\n\n![The pools, workloads, stores and identities of {}](graph.svg)\n\n", sys.name);
  const GraphShape& shape = plan.graph_shape;
  return fmt::format("## The system\n\nIts picture ({} parts, {} connections) is left out: Graphviz takes seconds to "
                     "minutes to lay out a graph this size. `trainc graph SPEC -o system.svg` draws it.\n\n",
                     shape.nodes, shape.edges);
}

/// What the pools hold, the quota they need and what they cost (`trainc plan`).
std::string capacity_section(const System& sys, const ResourcePlan& resources) {
  if (sys.pools.empty()) return "";
  std::string md = "## Capacity, quota and cost\n\n";
  md += "What the system holds at its smallest and largest, the Compute Engine quota it needs, and list prices "
        "per hour (`trainc plan` prints this, `--format json` for tools). A pool whose quota is short stays "
        "empty and its pods stay Pending: check the quota before standing the system up";
  md += sys.gcp ? " (`scripts/up.sh` compares it with the region's free quota first and warns of any "
                  "shortfall).\n\n"
                : ".\n\n";
  return md + "```text\n" + render_plan_text(resources) + "```\n\n";
}

/// The objects the pods name that trainc does not create (k8s/prerequisites.h), each with the
/// command that makes it; `scripts/apply.sh` checks them before it applies anything.
std::string prerequisites_list(const System& sys) {
  const auto prereqs = k8s::prerequisites(sys);
  std::string md, secrets;
  for (const auto& p : prereqs) {
    const std::string make = "`" + k8s::create_command(runbook_target(), sys, p).line() + "`";
    switch (p.kind) {
      case k8s::Prerequisite::Kind::kNamespace:
        md += fmt::format("- The namespace `{}` exists already (trainc neither creates nor deletes it); else {}.\n",
                          p.name, make);
        break;
      case k8s::Prerequisite::Kind::kServiceAccount:
        md += fmt::format("- The service account `{}` exists in `{}` (trainc neither creates nor deletes it); else "
                          "{}.\n",
                          p.name, sys.ns, make);
        break;
      case k8s::Prerequisite::Kind::kSecret: {
        std::vector<std::string> keys;
        for (const auto& k : p.keys) keys.push_back("`" + k + "`");
        secrets += fmt::format("- The Secret `{}` in `{}` with {} {}{}, read by {}. Make it (each value is asked for at a "
                          "prompt, so none lands in a file or the shell's history):\n\n  ```sh\n  {}\n  ```\n",
                          p.name, sys.ns, keys.size() == 1 ? "key" : "keys", fmt::join(keys, " and "),
                          p.whole ? " (every key of it becomes an environment variable)" : "", fmt::join(p.users, ", "),
                          k8s::create_command(runbook_target(), sys, p).line());
        break;
      }
    }
  }
  if (!secrets.empty() && sys.owns_namespace)
    md += fmt::format("- The Secrets live in the namespace trainc creates: make it first from its manifest, {}, which "
                      "apply.sh applies again unchanged.\n",
                      kubectl_code({"apply", "-f", std::string(k8s::kNamespaceFile)}));
  md += secrets;
  if (!prereqs.empty() && sys.gcp)
    md += "- `scripts/apply.sh` checks each of these before it applies anything, and stops naming every one "
          "missing.\n";
  return md;
}

/// What must hold before anything is applied.
std::string before_section(const System& sys, const k8s::Plan& plan) {
  std::string md = "## Before you apply\n\n";
  md += fmt::format("- {} names the cluster to deploy to.\n", kubectl_code({"config", "current-context"}));
  md += prerequisites_list(sys);
  bool s3 = false;
  const InjectedTool* aws = nullptr;  // the AWS CLI trainc copies into some step's pods
  for (const auto& st : sys.steps) {
    s3 = s3 || !st.inputs.empty() || st.outputs;
    for (const InjectedTool* t : injected_tools(sys, st))
      if (t->name == "aws") aws = t;
  }
  bool entry_scripts = false, ray_jobs = false;
  for (const auto& w : plan.workloads)
    for (const auto& o : w.objects) {
      entry_scripts = entry_scripts || o.role == k8s::Role::kEntryScript;
      ray_jobs = ray_jobs || o.role == k8s::Role::kRayJob;
    }
  if (entry_scripts) {
    md += "- Each step's image has `bash` and its training dependencies baked in.";
    if (s3 && aws)
      md += fmt::format(" The S3 syncs run the image's own AWS CLI (`aws`) when it has one, else the one an init "
                        "container copies from `{}` into `{}/{}` (it runs on glibc images)",
                        aws->image, k8s::kToolsDir, aws->bin);
    else if (s3)
      md += " The S3 syncs run the image's own AWS CLI (`aws`)";
    md += s3 ? "; the pods can reach the buckets (node IAM role or the store's `credentialsSecret`).\n" : "\n";
  }
  if (ray_jobs)
    md += "- The Ray cluster's image holds the code each RayJob's entrypoint runs, in its working directory.\n";
  return md;
}

/// How to make the GCP resources: Terraform or the gcloud scripts.
std::string infrastructure_section(const System& sys) {
  if (!sys.gcp) return "";
  std::string md = "\n## Stand up the infrastructure\n\n";
  md += infrastructure_notes(sys);
  md += fmt::format("The cluster `{}`, its node pools, the buckets trainc creates, the Google service account "
                    "and its bucket-level roles live in project `{}`, {} `{}`. Either with Terraform:\n\n"
                    "```sh\nterraform -chdir=terraform init\nterraform -chdir=terraform apply\n```\n\n"
                    "or with the gcloud scripts (idempotent; `--dry-run` prints every command first):\n\n"
                    "```sh\nscripts/up.sh --dry-run\nscripts/up.sh\n```\n\n"
                    "`scripts/apply.sh` then applies the manifests in dependency order; `scripts/status.sh` shows "
                    "where things stand.\n",
                    sys.cluster.name, sys.gcp->project, sys.gcp->zone.empty() ? "region" : "zone",
                    sys.gcp->location());
  if (!sys.pools.empty())
    md += "\nAfter an edit, run `scripts/up.sh` again before `scripts/apply.sh`: it resizes node pools and updates "
          "their autoscaling limits, node labels and taints in place, and stops at a change that needs a pool "
          "replaced (a machine type, accelerators, disk, provisioning), naming what the replacement deletes and the "
          "commands; `scripts/up.sh --replace POOL` runs them. `terraform apply` makes the same replacement (for a "
          "machine type or disk, it recreates every node) without asking: read its plan first.\n";
  return md;
}

/// One step of the rollout (k8s/rollout.h) as the commands that do it by hand, a line each.
std::string apply_commands(const System& sys, const RolloutStep& step) {
  const KubeTarget kube = runbook_target();
  std::vector<CommandLine> cmds;
  auto apply_each = [&] {  // a file a line, each easy to run again alone
    for (const auto& f : step.files) cmds.push_back(cmd::apply_files(kube, {f}));
  };
  auto wait_each = [&] {  // what the step waits for first; a jsonpath's braces are quoted for the shell
    for (const k8s::Object* done : step.waits)
      cmds.push_back(cmd::kubectl(kube, {"wait", "-n", sys.ns, fmt::format("--for={}", k8s::wait_condition(done->ready)),
                                         "--timeout=-1s", k8s::kubectl_ref(*done)}));
  };
  switch (step.kind) {
    case RolloutStep::Kind::kImages:  // each is in the registry (see "Build the images")
      for (const auto& i : step.images) cmds.push_back(cmd::gcloud({"artifacts", "docker", "images", "describe", i.image}));
      break;
    case RolloutStep::Kind::kInstall:
      for (const Operator* op : step.charts) cmds.push_back(cmd::helm_install(kube, *op));
      if (step.manifest) {
        cmds.push_back(cmd::apply_manifest(kube, *step.manifest, step.controller));
        if (step.addon == Addon::kKueue) {  // its configuration, then its pods rolled onto it (see Queue)
          const KueueConfig& k = catalog().kueue_config();
          cmds.push_back(cmd::apply_addon_file(kube, scripts::kKueueConfigFile));
          cmds.push_back(cmd::annotate_pod_template(kube, step.manifest->ns, k.deployment,
                                                    std::string(k8s::kKueueConfigAnnotation), k8s::kueue_config_mark(sys)));
          cmds.push_back(cmd::rollout_status(kube, step.manifest->ns, k.deployment, "300s"));
        }
        if (step.controller) cmds.push_back(cmd::wait_deployments(kube, *step.manifest));
      }
      break;
    case RolloutStep::Kind::kShared:
    case RolloutStep::Kind::kCluster: apply_each(); break;
    case RolloutStep::Kind::kContents: {
      wait_each();
      std::string md;
      for (const auto& c : cmds) md += c.line() + "\n";
      return md + contents_runbook_commands(sys, *step.workload->service);
    }
    case RolloutStep::Kind::kService:
      wait_each();
      apply_each();
      cmds.push_back(cmd::kubectl(kube, {"rollout", "status", "-n", sys.ns, k8s::kubectl_ref(step.workload->done())}));
      break;
    case RolloutStep::Kind::kHealth: break;  // scripts/health.sh, named above the commands
    case RolloutStep::Kind::kWorkload: {
      wait_each();
      // Its run is applied only where it is not on the cluster yet, as apply.sh's start_run: a run
      // named by what it runs is this run, and applying it again would send back what Kueue wrote
      // into its pod templates, which the server refuses on a JobSet.
      const k8s::Object& run = step.workload->done();
      if (run.role == k8s::Role::kCronJob) {
        apply_each();
        break;
      }
      for (const auto& f : step.files)
        if (f != run.file) cmds.push_back(cmd::apply_files(kube, {f}));
      std::string md;
      for (const auto& c : cmds) md += c.line() + "\n";
      return md + cmd::kubectl(kube, {"get", "-n", sys.ns, k8s::kubectl_ref(run), "--output=name"}).line() +
             " >/dev/null 2>&1 || " + cmd::apply_files(kube, {run.file}).line() + "\n";
    }
  }
  std::string md;
  for (const auto& c : cmds) md += c.line() + "\n";
  return md;
}

/// The order to apply the objects in, as commands.
std::string apply_section(const System& sys, const Planned& plan) {
  const std::string& ns = sys.ns;
  std::string md = "\n## Apply\n\n";
  bool has_needs = false;
  for (const auto& st : sys.steps) has_needs = has_needs || !st.needs.empty();
  if (!has_needs && plan.clusters.empty() && plan.services.empty() && !plan.needs_jobset && !plan.needs_kueue) {
    md += "```sh\n";
    for (const auto& step : plan.rollout.steps)  // nothing to order but the image check
      if (step.kind == RolloutStep::Kind::kImages) md += apply_commands(sys, step);
    md += cmd::kubectl(runbook_target(), {"apply", "-k", "k8s/"}).line() + "\n```\n\n";
  } else {
    const std::string apply_all = kubectl_code({"apply", "-k", "k8s/"});
    md += !plan.services.empty()
              ? "Operators come first, then long-lived clusters and services; a step starts once what it runs on "
                "is ready and the steps it needs have completed (`scripts/apply.sh` does all of this and then runs "
                "`scripts/health.sh`):\n\n```sh\n"
          : plan.clusters.empty() && !has_needs
              ? "The controllers come first (Kueue admits queued steps, TPU steps are JobSets), then the "
                "steps:\n\n```sh\n"
          : plan.clusters.empty()
              ? "Steps depend on each other (`needs`), so start each Job after the ones it needs have completed "
                "(" + apply_all + " would start them all at once):\n\n```sh\n"
              : "Long-lived clusters come first; a step on a cluster starts once the cluster is ready, and a step "
                "that needs others once they have completed (" + apply_all + " would start them all at "
                "once):\n\n```sh\n";
    for (const auto& step : plan.rollout.steps) md += apply_commands(sys, step);
    md += "```\n\n";
    for (const auto& w : plan.services) md += contents_runbook_note(sys, *w.service);
  }
  if (!plan.workloads.empty())
    md += "Each step's Job is named by what it runs (`<system>-<step>-<run>`) and applied only where no run of that "
          "name is on the cluster (the guard before its `||`): applying this output again starts nothing, "
          "and after a spec change only the changed steps and the steps after them start, as new runs beside "
          "the earlier ones. A run is never applied over itself: Kueue and the Job controllers write into it "
          "once it starts, and the API server refuses a changed JobSet's jobs. " +
          std::string(sys.gcp ? "`scripts/apply.sh` also deletes what the output no longer holds and the runs "
                                "beyond each step's `history`; `--rerun STEP` starts a step again. "
                              : "") +
          "Applying the kustomization deletes nothing: remove earlier runs by their labels (" +
          kubectl_code({"delete", "jobs", "-n", ns, "-l", "trainc.dev/step=STEP,trainc.dev/run!=RUN"}) + ").\n\n";
  return md;
}

/// How to follow the steps: their Jobs, pods and logs, and what a TPU step's JobSet does.
std::string watch_section(const System& sys, const k8s::Plan& plan) {
  if (plan.workloads.empty()) return "";
  const std::string& ns = sys.ns;
  const KubeTarget kube = runbook_target();
  std::string md = "## Watch\n\n```sh\n";
  md += cmd::kubectl(kube, {"get", "jobs,pods", "-n", ns, "-l", "app.kubernetes.io/part-of=" + sys.name, "-w"}).line();
  for (const auto& w : plan.workloads) {
    const k8s::Object& done = w.done();
    if (done.role == k8s::Role::kRayJob)
      md += "\n" + ray_job_watch(sys, *w.step, done);
    else if (w.step->distributed())  // the pods carry their workload's name as the instance label
      md += "\n" + cmd::kubectl(kube, {"logs", "-n", ns, "-f", "-l", "app.kubernetes.io/instance=" + done.name, "--prefix",
                                        fmt::format("--max-log-requests={}", w.step->nodes * w.step->slices)})
                        .line();
    else
      md += "\n" + cmd::kubectl(kube, {"logs", "-n", ns, "-f", k8s::logs_ref(done)}).line();
  }
  md += "\n```\n\n";
  for (const auto& w : plan.workloads)
    if (w.done().role == k8s::Role::kRayJob) {
      md += ray_job_watch_note();
      break;
    }
  return md;
}

/// How to delete it all, in order.
std::string teardown_section(const System& sys, const Planned& plan) {
  const KubeTarget kube = runbook_target();
  std::string md = "## Tear down\n\n```sh\n";
  for (const auto& step : plan.rollout.teardown) {
    switch (step.kind) {
      case TeardownStep::Kind::kReleaseLoadBalancer:  // while the cluster can release it
      case TeardownStep::Kind::kUninstall: md += cmd::helm_uninstall(kube, *step.chart, false).line(); break;
      case TeardownStep::Kind::kDeleteObjects: md += cmd::kubectl(kube, {"delete", "-k", "k8s/"}).line(); break;
      case TeardownStep::Kind::kInfrastructure:
        if (!sys.gcp) continue;
        md += "scripts/down.sh        # or: terraform -chdir=terraform destroy";
        break;
    }
    md += "\n";
  }
  md += "```\n\n";
  if (sys.owns_namespace)
    md += fmt::format("This deletes the namespace `{}` and everything in it. ", sys.ns);
  md += sys.gcp ? "`scripts/down.sh` deletes only what `scripts/up.sh` made, in reverse order, and keeps buckets "
                  "that still hold data unless told otherwise.\n"
                : "Data and outputs in object storage are kept.\n";
  return md;
}

class RunbookEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "runbook"; }

  void emit(const System& sys, const Planned& plan, OutputSink& out) const override {
    std::string md = files_section(sys, plan, out);
    md += system_section(sys, plan, out);
    md += capacity_section(sys, plan.resources);
    md += security_runbook_section(sys, plan);
    md += before_section(sys, plan);
    md += infrastructure_section(sys);
    md += scripts::build_runbook_section(sys);
    md += apply_section(sys, plan);
    md += watch_section(sys, plan);
    md += queue_runbook_section(sys);
    md += multi_node_section(sys);
    md += clusters_section(sys, plan);
    md += services_section(sys, plan);
    md += failures_runbook_section(sys, plan);
    md += change_runbook_section(sys, plan);
    md += ci_runbook_section(sys);
    md += teardown_section(sys, plan);
    out.add("README.md", md);
  }
};

}  // namespace

std::unique_ptr<Emitter> new_runbook_emitter() { return std::make_unique<RunbookEmitter>(); }

}  // namespace trainc
