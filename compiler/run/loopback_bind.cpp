// Preloaded (LD_PRELOAD) into the processes `trainc run --local` starts for a spec: a TCP socket
// bound to every interface (0.0.0.0 or ::) is bound to loopback instead, so that what listens
// for a pod in the cluster, where only its peers reach it, does not listen on this machine's
// network. Some listeners take no address to bind (PyTorch's c10d store binds every interface,
// whatever its host), so flags alone cannot keep them on loopback. The v4-mapped any address
// (::ffff:0.0.0.0) is every IPv4 interface too. A UDP socket bound to every interface on a port of
// its own is a server (Gloo's and NCCL's bootstrap, a metrics agent) and moves as well; one on
// port 0 is a client's ephemeral socket, left alone so that it can still send beyond loopback.
//
// A connection to another of this machine's own addresses reaches such a listener where it now
// is: torchrun's workers connect to the address the host name resolves to, which on a stock Debian
// or Ubuntu is 127.0.1.1 and on many cloud machines is the machine's network address, and a
// listener on every interface would have taken it. Only a connection that would otherwise be
// refused changes: the port must have no listener on that address or on every interface, and have
// one on loopback. Other connections and sockets bound to a named address are untouched.
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace {

using BindFn = int (*)(int, const sockaddr*, socklen_t);
using ConnectFn = int (*)(int, const sockaddr*, socklen_t);

/// Looked up on each call: a function-local static would need libstdc++'s guard, and this library
/// is loaded into programs that do not link libstdc++.
BindFn real_bind() { return reinterpret_cast<BindFn>(dlsym(RTLD_NEXT, "bind")); }
ConnectFn real_connect() { return reinterpret_cast<ConnectFn>(dlsym(RTLD_NEXT, "connect")); }

int socket_type(int fd) {
  int type = 0;
  socklen_t len = sizeof type;
  return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 ? type : 0;
}

bool is_stream(int fd) { return socket_type(fd) == SOCK_STREAM; }

/// Whether a bind of `fd` to every interface on `port` (host order) is one to move to loopback:
/// any TCP socket, and a UDP socket on a port of its own.
bool moves(int fd, unsigned port) {
  const int type = socket_type(fd);
  return type == SOCK_STREAM || (type == SOCK_DGRAM && port != 0);
}

in6_addr v4_mapped(in_addr_t net_order) {
  in6_addr mapped{};
  mapped.s6_addr[10] = mapped.s6_addr[11] = 0xff;
  std::memcpy(&mapped.s6_addr[12], &net_order, 4);
  return mapped;
}

/// A dual-stack socket keeps taking IPv4 connections (to 127.0.0.1) on the v4-mapped loopback;
/// an IPv6-only one gets ::1.
in6_addr loopback6(int fd) {
  int v6only = 0;
  socklen_t len = sizeof v6only;
  getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len);
  return v6only ? in6addr_loopback : v4_mapped(htonl(INADDR_LOOPBACK));
}

// --- The listeners of this network namespace, from /proc/net/tcp and /proc/net/tcp6 ---------------

/// Every address is kept as IPv6, an IPv4 one v4-mapped.
struct Listeners {
  bool on_target = false;    ///< a listener on the address connected to
  bool on_any = false;       ///< one on every interface (0.0.0.0 or ::)
  bool on_loopback4 = false;  ///< one on 127.0.0.1, or on its v4-mapped form
  bool on_loopback6 = false;  ///< one on ::1
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/// Parses `words` 32-bit words of 8 hex digits each at `s` into `out`, as /proc prints an address:
/// each word in host order.
bool parse_words(const char* s, int words, unsigned char* out) {
  for (int w = 0; w < words; ++w) {
    uint32_t word = 0;
    for (int i = 0; i < 8; ++i) {
      const int d = hex_digit(s[w * 8 + i]);
      if (d < 0) return false;
      word = (word << 4) | static_cast<uint32_t>(d);
    }
    std::memcpy(out + w * 4, &word, 4);  // host order, as the kernel printed it
  }
  return true;
}

/// One line of /proc/net/tcp{,6}: "  sl: ADDR:PORT REMOTE:PORT ST ...". False when it is not a
/// listening socket's line.
bool parse_listener(const char* line, bool six, in6_addr& addr, unsigned& port) {
  const char* p = std::strchr(line, ':');
  if (!p) return false;
  ++p;
  while (*p == ' ') ++p;
  const int words = six ? 4 : 1;
  unsigned char raw[16];
  if (!parse_words(p, words, raw) || p[words * 8] != ':') return false;
  p += words * 8 + 1;
  port = 0;
  for (int i = 0; i < 4; ++i) {
    const int d = hex_digit(p[i]);
    if (d < 0) return false;
    port = (port << 4) | static_cast<unsigned>(d);
  }
  p += 4;
  while (*p == ' ') ++p;
  p = std::strchr(p, ' ');  // the remote address
  if (!p) return false;
  while (*p == ' ') ++p;
  if (std::strncmp(p, "0A", 2) != 0) return false;  // TCP_LISTEN
  if (six) std::memcpy(addr.s6_addr, raw, 16);
  else {
    in_addr_t v4;
    std::memcpy(&v4, raw, 4);
    addr = v4_mapped(v4);
  }
  return true;
}

bool is_v4_mapped(const in6_addr& a) { return IN6_IS_ADDR_V4MAPPED(&a); }

void scan(const char* file, bool six, const in6_addr& target, unsigned port, Listeners& found) {
  const int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const in6_addr loop4 = v4_mapped(htonl(INADDR_LOOPBACK));
  char buf[8192];
  size_t have = 0;
  for (;;) {
    const ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    have += static_cast<size_t>(n);
    buf[have] = '\0';
    char* start = buf;
    for (char* nl; (nl = std::strchr(start, '\n'));) {
      *nl = '\0';
      in6_addr a;
      unsigned p;
      if (parse_listener(start, six, a, p) && p == port) {
        if (std::memcmp(&a, &target, sizeof a) == 0) found.on_target = true;
        if (std::memcmp(&a, &loop4, sizeof a) == 0) found.on_loopback4 = true;
        if (IN6_IS_ADDR_LOOPBACK(&a)) found.on_loopback6 = true;
        // 0.0.0.0 takes IPv4 alone; :: takes both unless IPv6-only, which /proc does not say.
        const in6_addr any4 = v4_mapped(htonl(INADDR_ANY));
        if (IN6_IS_ADDR_UNSPECIFIED(&a) || (is_v4_mapped(target) && std::memcmp(&a, &any4, sizeof a) == 0))
          found.on_any = true;
      }
      start = nl + 1;
    }
    have = static_cast<size_t>(buf + have - start);
    std::memmove(buf, start, have);
    if (have == sizeof buf - 1) have = 0;  // a line longer than the buffer: none of /proc's are
  }
  close(fd);
}

/// Whether `target` is one of this machine's addresses: a datagram socket can bind it.
bool is_own_address(const in6_addr& target) {
  const bool four = is_v4_mapped(target);
  const int fd = socket(four ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int rc;
  if (four) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    std::memcpy(&a.sin_addr, &target.s6_addr[12], 4);
    rc = real_bind()(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = target;
    rc = real_bind()(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  }
  close(fd);
  return rc == 0;
}

/// Where a connection to `target`:`port` goes instead, when it belongs on loopback: the address is
/// this machine's own but not loopback, and only loopback has a listener on the port. False to
/// leave the connection alone. An IPv4 socket reaches 127.0.0.1 alone; an IPv6 one reaches ::1, or
/// failing that the v4-mapped 127.0.0.1 that a dual-stack listener on :: was moved to.
bool moved_listener(const in6_addr& target, unsigned port, in6_addr& to) {
  const in6_addr loop4 = v4_mapped(htonl(INADDR_LOOPBACK));
  if (std::memcmp(&target, &loop4, sizeof target) == 0 || IN6_IS_ADDR_LOOPBACK(&target)) return false;
  if (IN6_IS_ADDR_UNSPECIFIED(&target) || !is_own_address(target)) return false;
  Listeners found;
  scan("/proc/net/tcp", false, target, port, found);
  scan("/proc/net/tcp6", true, target, port, found);
  if (found.on_target || found.on_any) return false;
  if (!is_v4_mapped(target) && found.on_loopback6) to = in6addr_loopback;
  else if (found.on_loopback4) to = loop4;
  else return false;
  return true;
}

}  // namespace

extern "C" int bind(int fd, const sockaddr* addr, socklen_t len) {
  BindFn bind_fn = real_bind();
  if (addr && addr->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    sockaddr_in a;
    std::memcpy(&a, addr, sizeof a);
    if (a.sin_addr.s_addr == htonl(INADDR_ANY) && moves(fd, ntohs(a.sin_port))) {
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return bind_fn(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    }
  } else if (addr && addr->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    sockaddr_in6 a;
    std::memcpy(&a, addr, sizeof a);
    const in6_addr any4 = v4_mapped(htonl(INADDR_ANY));
    const bool mapped_any = std::memcmp(&a.sin6_addr, &any4, sizeof any4) == 0;
    if ((IN6_IS_ADDR_UNSPECIFIED(&a.sin6_addr) || mapped_any) && moves(fd, ntohs(a.sin6_port))) {
      a.sin6_addr = mapped_any ? v4_mapped(htonl(INADDR_LOOPBACK)) : loopback6(fd);
      return bind_fn(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    }
  }
  return bind_fn(fd, addr, len);
}

extern "C" int connect(int fd, const sockaddr* addr, socklen_t len) {
  ConnectFn connect_fn = real_connect();
  if (addr && addr->sa_family == AF_INET && len >= sizeof(sockaddr_in) && is_stream(fd)) {
    sockaddr_in a;
    std::memcpy(&a, addr, sizeof a);
    in6_addr to;
    if (moved_listener(v4_mapped(a.sin_addr.s_addr), ntohs(a.sin_port), to)) {
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return connect_fn(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    }
  } else if (addr && addr->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6) && is_stream(fd)) {
    sockaddr_in6 a;
    std::memcpy(&a, addr, sizeof a);
    in6_addr to;
    if (moved_listener(a.sin6_addr, ntohs(a.sin6_port), to)) {
      a.sin6_addr = to;
      return connect_fn(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    }
  }
  return connect_fn(fd, addr, len);
}
