#include "commands/command.h"

#include <stdexcept>

#include <doctest/doctest.h>

namespace trainc {

TEST_CASE("port_forward and load_balancer_ip name the Service in its namespace") {
  const KubeTarget runbook{"", "", true};
  CHECK(cmd::port_forward(runbook, "ns", "svc", {"8000:8000", "8001:8001"}).line() ==
        "kubectl port-forward -n ns service/svc 8000:8000 8001:8001");
  CHECK(cmd::load_balancer_ip(runbook, "gw", "istio-ingress").line() ==
        "kubectl get service gw -n istio-ingress -o 'jsonpath={.status.loadBalancer.ingress[0].ip}'");
  const KubeTarget script{"\"$KUBE_CONTEXT\"", "K8S_DIR", false};
  CHECK(cmd::port_forward(script, "ns", "svc", {"8787:8787"}).line() ==
        "kubectl --context \"$KUBE_CONTEXT\" port-forward -n ns service/svc 8787:8787");
}

TEST_CASE("region_quotas: the format's columns on a line of their own") {
  const CommandLine c = cmd::region_quotas("\"$REGION\"", "\"$PROJECT_ID\"");
  const auto parts = c.parts();
  REQUIRE(parts.size() == 2);
  CHECK(parts[0] == "gcloud compute regions describe \"$REGION\" --project=\"$PROJECT_ID\" --flatten=quotas \\");
  CHECK(parts[1] == "--format='csv[no-heading](quotas.metric,quotas.limit,quotas.usage)'");
  CHECK(c.line() == parts[0] + "\n  " + parts[1]);
}

TEST_CASE("curl: the Host header only when there is a host; the URL as written") {
  CHECK(cmd::curl("http://$GATEWAY_IP/v2/health/ready", "").line() == "curl http://$GATEWAY_IP/v2/health/ready");
  CHECK(cmd::curl("http://$GATEWAY_IP/v1/models", "a.example.com").line() ==
        "curl -H 'Host: a.example.com' http://$GATEWAY_IP/v1/models");
  CommandLine chat = cmd::curl("http://localhost:8000/v1/chat/completions", "");
  chat.opt("-H", "Content-Type: application/json").next_line().opt("-d", R"({"it's": 1})");
  CHECK(chat.line() ==
        "curl http://localhost:8000/v1/chat/completions -H 'Content-Type: application/json' \\\n"
        "  -d '{\"it'\\''s\": 1}'");
}

TEST_CASE("argv: literals unquoted, and none for a command with a shell word") {
  const auto argv = cmd::enable_apis("$PROJECT_ID", {"compute.googleapis.com", "iam.googleapis.com"}).argv();
  CHECK(argv == std::vector<std::string>{"gcloud", "services", "enable", "compute.googleapis.com", "iam.googleapis.com",
                                         "--project=$PROJECT_ID"});
  // The shell rendering of the same command quotes what the shell would expand.
  CHECK(cmd::enable_apis("$PROJECT_ID", {"iam.googleapis.com"}).line() ==
        "gcloud services enable iam.googleapis.com --project='$PROJECT_ID'");
  CommandLine spaced;
  spaced.spaced = true;
  spaced.arg("helm").opt("--namespace", "a b");
  CHECK(spaced.argv() == std::vector<std::string>{"helm", "--namespace", "a b"});
  CHECK_THROWS_AS(cmd::region_quotas("\"$REGION\"", "\"$PROJECT_ID\"").argv(), std::logic_error);
  CHECK_THROWS_AS(cmd::apply_files({"", "", false}, {"k8s/a.yaml"}).argv(), std::logic_error);
  CHECK(cmd::builds_submit("ci/x.yaml", "r", "_A=1").argv().back() == ".");
}

}  // namespace trainc
