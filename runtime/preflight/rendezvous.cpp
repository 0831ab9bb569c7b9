#include "preflight/rendezvous.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <memory>
#include <span>
#include <system_error>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"

namespace trainrt::preflight {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kMagic = "trainrt-preflight/1";
constexpr std::size_t kMaxLine = 1 << 20;
/// Rank 0's timeout started before it accepted a rank, so its answer comes within `timeout` of the
/// connection; the grace covers the sending.
constexpr Millis kAnswerGrace{2000};
constexpr Millis kRetryPause{250};
constexpr Millis kConnectAttempt{5000};

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    reset();
    fd_ = std::exchange(o.fd_, -1);
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, INT_MAX));
}

void pause_until(Clock::time_point deadline) {
  std::this_thread::sleep_for(std::min<Clock::duration>(kRetryPause, deadline - Clock::now()));
}

std::string seconds_text(Millis d) {
  return d.count() % 1000 == 0 ? fmt::format("{}s", d.count() / 1000) : fmt::format("{:.1f}s", d.count() / 1000.0);
}

/// Writes all of `data` before `deadline`.
bool send_all(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, remaining_ms(deadline)) <= 0) return false;
    } else {
      return false;
    }
  }
  return true;
}

/// Bytes read from a non-blocking socket, handed out one line at a time.
struct LineReader {
  enum class Status { line, more, closed, error };
  std::string buf;
  bool eof = false;  ///< the peer has closed its side (lines may still be buffered)

  /// Reads whatever is available now.
  Status fill(int fd) {
    char chunk[4096];
    for (;;) {
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n > 0) {
        buf.append(chunk, static_cast<std::size_t>(n));
        if (buf.size() > kMaxLine) return Status::error;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) eof = true;
      if (has_line()) return Status::line;
      if (n == 0) return Status::closed;
      return errno == EAGAIN || errno == EWOULDBLOCK ? Status::more : Status::error;
    }
  }
  bool has_line() const { return buf.find('\n') != std::string::npos; }
  std::string pop() {
    const auto i = buf.find('\n');
    std::string line = buf.substr(0, i);
    buf.erase(0, i + 1);
    return line;
  }
};

/// Waits for one line until `deadline`.
std::pair<LineReader::Status, std::string> read_line(int fd, Clock::time_point deadline) {
  LineReader in;
  for (;;) {
    const auto st = in.fill(fd);
    if (st == LineReader::Status::line) return {st, in.pop()};
    if (st != LineReader::Status::more) return {st, ""};
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n == 0) return {LineReader::Status::more, ""};  // timed out
    if (n < 0 && errno != EINTR) return {LineReader::Status::error, ""};
  }
}

std::optional<int> to_int(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const auto i = s.find(sep);
    out.push_back(s.substr(0, i));
    if (i == std::string_view::npos) return out;
    s.remove_prefix(i + 1);
  }
}

/// "3,0,12" -> {3, 0, 12}; nullopt if any item is not an integer.
std::optional<std::vector<int>> parse_ints(std::string_view csv) {
  std::vector<int> out;
  for (auto item : split(csv, ',')) {
    auto v = to_int(item);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

std::string csv(const std::vector<int>& v) {
  return fmt::format("{}", fmt::join(v, ","));
}

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::optional<std::string> unhex(std::string_view text) {
  if (text.size() % 2 != 0) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += 2) {
    const int hi = nibble(text[i]), lo = nibble(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi << 4 | lo);
  }
  return out;
}

std::string ranks_phrase(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", join_ranks(ranks));
}

/// Parses a rank's first line; nullopt for anything that is not a trainrt rank speaking.
std::optional<Hello> parse_hello(std::string_view line) {
  auto words = split(line, ' ');
  if (words.size() != 4 || words[0] != kMagic) return std::nullopt;
  Hello h;
  const std::pair<std::string_view, int*> fields[] = {{"rank=", &h.rank}, {"world=", &h.world_size},
                                                      {"gpus=", &h.local_gpus}};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto [key, out] = fields[i];
    if (!words[i + 1].starts_with(key)) return std::nullopt;
    auto v = to_int(words[i + 1].substr(key.size()));
    if (!v) return std::nullopt;
    *out = *v;
  }
  return h;
}

/// One connection attempt to every address `ep` resolves to. On failure, says why in `error`.
Fd connect_once(const Endpoint& ep, Clock::time_point deadline, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(ep.port);
  if (int rc = ::getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    error = fmt::format("cannot resolve '{}': {}", ep.host, ::gai_strerror(rc));
    return Fd();
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addrs(found, ::freeaddrinfo);
  for (addrinfo* a = addrs.get(); a != nullptr; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) {
      error = fmt::format("socket: {}", std::strerror(errno));
      continue;
    }
    int rc = ::connect(fd.get(), a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd.get(), POLLOUT, 0};
      const int wait = std::min(remaining_ms(deadline), static_cast<int>(kConnectAttempt.count()));
      if (::poll(&p, 1, wait) <= 0) {
        error = fmt::format("connecting to {}:{} timed out", ep.host, ep.port);
        continue;
      }
      int soerr = 0;
      socklen_t len = sizeof soerr;
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len);
      rc = soerr == 0 ? 0 : -1;
      errno = soerr;
    }
    if (rc == 0) return fd;
    error = fmt::format("connecting to {}:{}: {}", ep.host, ep.port, std::strerror(errno));
  }
  return Fd();
}

/// Rank 0's answer, as seen by a rank > 0.
RendezvousResult parse_answer(std::string_view line, const Endpoint& ep) {
  RendezvousResult r;
  if (line.starts_with("ok ")) {
    auto words = split(line.substr(3), ' ');
    if (words.size() == 2 && words[0].starts_with("gpus=") && words[1].starts_with("payload=")) {
      auto gpus = parse_ints(words[0].substr(5));
      auto payload = unhex(words[1].substr(8));
      if (gpus && payload) {
        r.local_gpus = std::move(*gpus);
        r.payload = std::move(*payload);
        return r;
      }
    }
  } else if (line.starts_with("missing ")) {
    if (auto ranks = parse_ints(line.substr(8))) {
      r.code = kRankTimeout;
      r.missing = std::move(*ranks);
      r.error = fmt::format("{} never joined: rank 0 (at {}:{}) gave up waiting", ranks_phrase(r.missing), ep.host,
                            ep.port);
      return r;
    }
  } else if (line.starts_with("error ")) {
    r.code = kFailed;
    r.error = fmt::format("rank 0 refused the rendezvous: {}", line.substr(6));
    return r;
  }
  r.code = kFailed;
  r.error = fmt::format("unexpected answer from {}:{} (is it a trainrt preflight?): '{}'", ep.host, ep.port,
                        line.substr(0, 80));
  return r;
}

/// Rank 0's view of the other ranks while it waits for them.
struct Gathering {
  struct Peer {
    Fd fd;
    LineReader in;
    int rank = -1;  ///< -1 until its hello arrives
  };
  int world;
  std::vector<Peer> peers;      ///< accepted connections, joined or not yet
  std::vector<int> local_gpus;  ///< by rank; -1 for a rank not (or no longer) joined
  std::string refusal;          ///< set when a rank contradicts rank 0: every rank then fails

  explicit Gathering(const Hello& self)
      : world(self.world_size), local_gpus(static_cast<std::size_t>(self.world_size), -1) {
    local_gpus[0] = self.local_gpus;
  }

  long joined() const {
    return std::count_if(peers.begin(), peers.end(), [](const Peer& p) { return p.rank >= 0; });
  }

  std::vector<int> missing() const {
    std::vector<int> out;
    for (int rank = 1; rank < world; ++rank)
      if (std::none_of(peers.begin(), peers.end(), [rank](const Peer& p) { return p.rank == rank; }))
        out.push_back(rank);
    return out;
  }

  void accept_all(int listen_fd) {
    int c;
    while ((c = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
      peers.push_back({Fd(c), {}, -1});
  }

  void leave(Peer& p) {
    if (p.rank >= 0) local_gpus[static_cast<std::size_t>(p.rank)] = -1;
    p.fd.reset();
  }

  /// Handles what the peers sent; `ready` holds their poll results, in order.
  void read(std::span<const pollfd> ready) {
    for (std::size_t i = 0; i < peers.size() && refusal.empty(); ++i) {
      Peer& p = peers[i];
      if (ready[i].revents == 0 || !p.fd) continue;
      const auto st = p.in.fill(p.fd.get());
      if (p.rank >= 0) {  // a joined rank says nothing more: readable means it went away
        if (st == LineReader::Status::closed || st == LineReader::Status::error) leave(p);
        continue;
      }
      if (st == LineReader::Status::more) continue;
      std::optional<Hello> h;
      if (st == LineReader::Status::line) h = parse_hello(p.in.pop());
      if (!h || p.in.eof) {  // gone already, or not a trainrt rank (a port scan, a stray client)
        leave(p);
        continue;
      }
      if (h->world_size != world) {
        refusal = fmt::format("rank {} was started with world size {} but rank 0 with {}", h->rank, h->world_size,
                              world);
      } else if (h->rank <= 0 || h->rank >= world) {
        refusal = fmt::format("a peer says it is rank {}, outside 1..{}", h->rank, world - 1);
      } else {
        // A rank that joins again (its pod was restarted) replaces its earlier connection.
        for (auto& q : peers)
          if (&q != &p && q.rank == h->rank) q.fd.reset();
        p.rank = h->rank;
        local_gpus[static_cast<std::size_t>(p.rank)] = h->local_gpus;
      }
    }
    std::erase_if(peers, [](const Peer& p) { return !p.fd; });
  }

  /// Drops joined ranks whose connection has closed (a pod that died after saying hello).
  void drop_departed() {
    for (auto& p : peers) {
      pollfd pfd{p.fd.get(), POLLIN, 0};
      if (p.rank < 0 || ::poll(&pfd, 1, 0) <= 0) continue;
      const auto st = p.in.fill(p.fd.get());
      if (st == LineReader::Status::closed || st == LineReader::Status::error || p.in.eof) leave(p);
    }
    std::erase_if(peers, [](const Peer& p) { return !p.fd; });
  }

  /// Sends `text` to the ranks (a refusal to every peer, the one that caused it too), then lets
  /// them hang up first: the TIME_WAIT sockets are then theirs, on ephemeral ports, and the
  /// training that follows can bind this port again at once.
  void answer(const std::string& text, Clock::time_point deadline) {
    for (auto& p : peers)
      if (p.rank >= 0 || !refusal.empty()) send_all(p.fd.get(), text, deadline);  // a failure: it left
    for (;;) {
      std::erase_if(peers, [](const Peer& p) { return !p.fd || p.rank < 0; });
      const int wait = remaining_ms(deadline);
      if (peers.empty() || wait == 0) return;
      std::vector<pollfd> pfds;
      for (const auto& p : peers) pfds.push_back({p.fd.get(), POLLIN, 0});
      if (::poll(pfds.data(), pfds.size(), wait) <= 0) return;
      for (std::size_t i = 0; i < peers.size(); ++i) {
        if (pfds[i].revents == 0) continue;
        const auto st = peers[i].in.fill(peers[i].fd.get());
        if (st == LineReader::Status::closed || st == LineReader::Status::error || peers[i].in.eof) peers[i].fd.reset();
      }
    }
  }
};

}  // namespace

std::optional<Endpoint> parse_endpoint(std::string_view text) {
  std::string_view host, port;
  if (text.starts_with('[')) {  // [v6]:port
    const auto close = text.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) return std::nullopt;
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  auto p = to_int(port);
  if (host.empty() || !p || *p <= 0 || *p > 65535) return std::nullopt;
  return Endpoint{std::string(host), static_cast<std::uint16_t>(*p)};
}

std::string join_ranks(const std::vector<int>& ranks) {
  return fmt::format("{}", fmt::join(ranks, ", "));
}

Coordinator::Coordinator(std::uint16_t port) {
  // One dual-stack IPv6 socket takes both families; nodes without IPv6 get an IPv4 one.
  Fd fd(::socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  const int one = 1, zero = 0;
  if (fd) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(port);
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) fd.reset();
  }
  if (!fd) {
    fd = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) throw std::system_error(errno, std::generic_category(), "socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(port);
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::system_error(errno, std::generic_category(), fmt::format("binding port {}", port));
  }
  if (::listen(fd.get(), SOMAXCONN) != 0)
    throw std::system_error(errno, std::generic_category(), fmt::format("listening on port {}", port));
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  fd_ = fd.release();
}

Coordinator::~Coordinator() {
  if (fd_ >= 0) ::close(fd_);
}

RendezvousResult Coordinator::serve(const Hello& self, const std::string& payload, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  Gathering g(self);
  for (;;) {
    if (!g.refusal.empty()) break;
    if (g.joined() == self.world_size - 1) {
      g.drop_departed();
      if (g.joined() == self.world_size - 1) break;
    }
    const int wait = remaining_ms(deadline);
    if (wait == 0) break;
    std::vector<pollfd> pfds{{fd_, POLLIN, 0}};
    for (const auto& p : g.peers) pfds.push_back({p.fd.get(), POLLIN, 0});
    if (::poll(pfds.data(), pfds.size(), wait) < 0 && errno != EINTR)
      throw std::system_error(errno, std::generic_category(), "poll");
    g.read(std::span(pfds).subspan(1));
    if (pfds[0].revents & POLLIN) g.accept_all(fd_);
  }

  RendezvousResult r;
  r.local_gpus = g.local_gpus;
  const std::vector<int> missing = g.missing();
  std::string answer;
  if (!g.refusal.empty()) {
    r.code = kFailed;
    r.error = "rendezvous refused: " + g.refusal;
    answer = "error " + g.refusal;
  } else if (!missing.empty()) {
    r.code = kRankTimeout;
    r.missing = missing;
    r.error = fmt::format("{} never joined within {}", ranks_phrase(missing), seconds_text(timeout));
    answer = "missing " + csv(missing);
  } else {
    r.payload = payload;
    answer = fmt::format("ok gpus={} payload={}", csv(r.local_gpus), hex(payload));
  }
  g.answer(answer + '\n', Clock::now() + kAnswerGrace);
  return r;
}

RendezvousResult join(const Endpoint& coordinator, const Hello& self, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string hello =
      fmt::format("{} rank={} world={} gpus={}\n", kMagic, self.rank, self.world_size, self.local_gpus);
  std::string last_error = "no attempt made";
  auto unreachable = [&] {
    RendezvousResult r;
    r.code = kRankTimeout;
    r.missing = {0};
    r.error = fmt::format("rank 0 never answered at {}:{} within {} (last attempt: {})", coordinator.host,
                          coordinator.port, seconds_text(timeout), last_error);
    return r;
  };

  while (Clock::now() < deadline) {
    Fd fd = connect_once(coordinator, deadline, last_error);
    if (!fd) {
      pause_until(deadline);
      continue;
    }
    const auto connected = Clock::now();
    if (!send_all(fd.get(), hello, connected + kAnswerGrace)) {
      last_error = "the connection broke while sending";
      pause_until(deadline);
      continue;
    }
    auto [status, line] = read_line(fd.get(), connected + timeout + kAnswerGrace);
    if (status == LineReader::Status::line) return parse_answer(line, coordinator);
    if (status == LineReader::Status::more) {  // connected, but no answer in time
      RendezvousResult r;
      r.code = kRankTimeout;
      r.error = fmt::format("rank 0 at {}:{} accepted this rank but did not answer within {}", coordinator.host,
                            coordinator.port, seconds_text(timeout));
      return r;
    }
    // Closed before answering: rank 0 restarted, or it is not a trainrt preflight. Try again.
    last_error = "rank 0 closed the connection without answering";
    pause_until(deadline);
  }
  return unreachable();
}

}  // namespace trainrt::preflight
