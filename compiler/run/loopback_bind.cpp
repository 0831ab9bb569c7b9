// Preloaded (LD_PRELOAD) into the processes `trainc run --local` starts for a spec: a TCP socket
// bound to every interface (0.0.0.0 or ::) is bound to loopback instead, so that what listens
// for a pod in the cluster, where only its peers reach it, does not listen on this machine's
// network. Some listeners take no address to bind (PyTorch's c10d store binds every interface,
// whatever its host), so flags alone cannot keep them on loopback. Outgoing connections and
// sockets bound to a named address are untouched.
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace {

using BindFn = int (*)(int, const sockaddr*, socklen_t);

/// Looked up on each call: a function-local static would need libstdc++'s guard, and this library
/// is loaded into programs that do not link libstdc++.
BindFn real_bind() { return reinterpret_cast<BindFn>(dlsym(RTLD_NEXT, "bind")); }

bool is_stream(int fd) {
  int type = 0;
  socklen_t len = sizeof type;
  return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

/// A dual-stack socket keeps taking IPv4 connections (to 127.0.0.1) on the v4-mapped loopback;
/// an IPv6-only one gets ::1.
in6_addr loopback6(int fd) {
  int v6only = 0;
  socklen_t len = sizeof v6only;
  getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len);
  if (v6only) return in6addr_loopback;
  in6_addr mapped{};
  mapped.s6_addr[10] = mapped.s6_addr[11] = 0xff;
  mapped.s6_addr[12] = 127;
  mapped.s6_addr[15] = 1;
  return mapped;
}

}  // namespace

extern "C" int bind(int fd, const sockaddr* addr, socklen_t len) {
  BindFn bind_fn = real_bind();
  if (addr && addr->sa_family == AF_INET && len >= sizeof(sockaddr_in) && is_stream(fd)) {
    sockaddr_in a;
    std::memcpy(&a, addr, sizeof a);
    if (a.sin_addr.s_addr == htonl(INADDR_ANY)) {
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return bind_fn(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    }
  } else if (addr && addr->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6) && is_stream(fd)) {
    sockaddr_in6 a;
    std::memcpy(&a, addr, sizeof a);
    if (IN6_IS_ADDR_UNSPECIFIED(&a.sin6_addr)) {
      a.sin6_addr = loopback6(fd);
      return bind_fn(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    }
  }
  return bind_fn(fd, addr, len);
}
