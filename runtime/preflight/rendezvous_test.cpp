#include <doctest/doctest.h>

#include <future>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "commands.h"
#include "preflight/rendezvous.h"

namespace trainrt::preflight {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

/// A 128-byte blob with every byte value the hex encoding must survive.
std::string blob() {
  std::string s(128, '\0');
  for (int i = 0; i < 128; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>(i * 37 + 3);
  s[5] = '\n';
  s[6] = '\0';
  return s;
}

/// Runs ranks 1..world-1 (except `absent`) as threads against a coordinator on loopback.
std::vector<std::future<RendezvousResult>> start_ranks(std::uint16_t port, int world, milliseconds timeout,
                                                       std::vector<int> absent = {}) {
  std::vector<std::future<RendezvousResult>> ranks;
  for (int r = 1; r < world; ++r) {
    if (std::find(absent.begin(), absent.end(), r) != absent.end()) continue;
    ranks.push_back(std::async(std::launch::async, [=] {
      return join(Endpoint{"127.0.0.1", port}, Hello{r, world, 10 + r}, timeout);
    }));
  }
  return ranks;
}

TEST_CASE("rendezvous: every rank gets rank 0's bytes and every rank's GPU count") {
  Coordinator c(0);
  REQUIRE(c.port() != 0);
  auto ranks = start_ranks(c.port(), 4, milliseconds(10'000));
  RendezvousResult r0 = c.serve(Hello{0, 4, 10}, blob(), milliseconds(10'000));
  CHECK(r0.code == kOk);
  CHECK(r0.payload == blob());
  CHECK(r0.local_gpus == std::vector<int>{10, 11, 12, 13});
  for (auto& f : ranks) {
    RendezvousResult r = f.get();
    CHECK(r.code == kOk);
    CHECK(r.error == "");
    CHECK(r.payload == blob());
    CHECK(r.local_gpus == std::vector<int>{10, 11, 12, 13});
  }
}

TEST_CASE("rendezvous: ranks that start before rank 0 listens retry until it does") {
  // Reserve a free port, release it, and start rank 1 before rank 0 binds it again.
  std::uint16_t port = 0;
  { port = Coordinator(0).port(); }
  auto ranks = start_ranks(port, 2, milliseconds(10'000));
  std::this_thread::sleep_for(milliseconds(600));
  Coordinator c(port);
  CHECK(c.serve(Hello{0, 2, 1}, "id", milliseconds(10'000)).code == kOk);
  CHECK(ranks[0].get().payload == "id");
}

TEST_CASE("rendezvous: a rank that never joins makes every waiting rank fail with 4, naming it") {
  Coordinator c(0);
  auto ranks = start_ranks(c.port(), 4, milliseconds(800), {2});
  const auto t0 = Clock::now();
  RendezvousResult r0 = c.serve(Hello{0, 4, 1}, blob(), milliseconds(800));
  CHECK(Clock::now() - t0 < milliseconds(3000));
  CHECK(r0.code == kRankTimeout);
  CHECK(r0.missing == std::vector<int>{2});
  CHECK(r0.error == "rank 2 never joined within 0.8s");
  CHECK(r0.payload.empty());
  for (auto& f : ranks) {
    RendezvousResult r = f.get();
    CHECK(r.code == kRankTimeout);
    CHECK(r.missing == std::vector<int>{2});
    CHECK(r.error.find("rank 2 never joined") == 0);
    CHECK(r.payload.empty());
  }
}

TEST_CASE("rendezvous: without rank 0, a rank gives up after its timeout with 4, naming rank 0") {
  std::uint16_t port = 0;
  { port = Coordinator(0).port(); }  // nothing listens there any more
  const auto t0 = Clock::now();
  RendezvousResult r = join(Endpoint{"127.0.0.1", port}, Hello{1, 2, 0}, milliseconds(700));
  const auto took = Clock::now() - t0;
  CHECK(took >= milliseconds(700));
  CHECK(took < milliseconds(3000));
  CHECK(r.code == kRankTimeout);
  CHECK(r.missing == std::vector<int>{0});
  CHECK(r.error.find("rank 0 never answered at 127.0.0.1:" + std::to_string(port) + " within 0.7s") == 0);
  CHECK(r.error.find("Connection refused") != std::string::npos);
}

TEST_CASE("rendezvous: a name that does not resolve is retried, then reported") {
  RendezvousResult r = join(Endpoint{"no-such-host.invalid", 29500}, Hello{1, 2, 0}, milliseconds(300));
  CHECK(r.code == kRankTimeout);
  CHECK(r.error.find("cannot resolve 'no-such-host.invalid'") != std::string::npos);
}

TEST_CASE("rendezvous: a rank with another world size is refused, and every rank hears why") {
  Coordinator c(0);
  auto ok = start_ranks(c.port(), 3, milliseconds(5000), {2});
  auto wrong = std::async(std::launch::async, [port = c.port()] {
    return join(Endpoint{"127.0.0.1", port}, Hello{2, 4, 0}, milliseconds(5000));
  });
  RendezvousResult r0 = c.serve(Hello{0, 3, 0}, "", milliseconds(5000));
  CHECK(r0.code == kFailed);
  CHECK(r0.error == "rendezvous refused: rank 2 was started with world size 4 but rank 0 with 3");
  RendezvousResult r2 = wrong.get();
  CHECK(r2.code == kFailed);
  CHECK(r2.error == "rank 0 refused the rendezvous: rank 2 was started with world size 4 but rank 0 with 3");
}

TEST_CASE("rendezvous: stray connections are ignored; a rank that reconnects replaces itself") {
  Coordinator c(0);
  // A port scanner: connects, sends junk, leaves. And a silent client that never says anything.
  auto connect_raw = [&](const std::string& text) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(c.port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    if (!text.empty()) REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    return fd;
  };
  ::close(connect_raw("GET / HTTP/1.0\r\n\r\n"));
  int silent = connect_raw("");
  // Rank 1 joins, its pod dies (connection closed), and it joins again.
  ::close(connect_raw("trainrt-preflight/1 rank=1 world=2 gpus=8\n"));
  auto ranks = start_ranks(c.port(), 2, milliseconds(5000));
  RendezvousResult r0 = c.serve(Hello{0, 2, 8}, "x", milliseconds(5000));
  CHECK(r0.code == kOk);
  CHECK(r0.local_gpus == std::vector<int>{8, 11});
  CHECK(ranks[0].get().code == kOk);
  ::close(silent);
}

TEST_CASE("rendezvous: a world of one needs nobody") {
  Coordinator c(0);
  RendezvousResult r = c.serve(Hello{0, 1, 2}, "id", milliseconds(100));
  CHECK(r.code == kOk);
  CHECK(r.payload == "id");
  CHECK(r.local_gpus == std::vector<int>{2});
}

TEST_CASE("endpoints: host:port, IPv4, bracketed IPv6") {
  auto e = parse_endpoint("trainer-0.trainer:29500");
  REQUIRE(e);
  CHECK(e->host == "trainer-0.trainer");
  CHECK(e->port == 29500);
  CHECK(parse_endpoint("10.0.0.2:1")->host == "10.0.0.2");
  CHECK(parse_endpoint("[fd00::1]:29500")->host == "fd00::1");
  for (const char* bad : {"", "host", "host:", ":29500", "host:0", "host:65536", "host:12ab", "fd00::1:29500", "[fd00::1]"})
    CHECK_MESSAGE(!parse_endpoint(bad), bad);
}

}  // namespace
}  // namespace trainrt::preflight
