#!/usr/bin/env python3
"""The preload `trainc run --local` loads into a spec's processes (compiler/run/loopback_bind.cpp),
judged from real sockets (TAP): a listener on every interface (0.0.0.0, ::, ::ffff:0.0.0.0, and a
UDP server on a port of its own) is moved to loopback, and a
connection to another of this machine's own addresses still reaches it there, as torchrun's
workers need when the host name resolves to 127.0.1.1 (a stock Debian /etc/hosts) or to the
machine's network address. A listener on a named address is left where it is and keeps its own
connections; a port nothing listens on stays refused.

Usage: loopback_bind_test.py TRAINC   (libtrainc-loopback.so is looked for beside TRAINC)
Each case runs in a child python with the library preloaded: `loopback_bind_test.py --probe CASE`.
"""
import os
import socket
import subprocess
import sys
import threading


def listen(family, host, v6only=None):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if v6only is not None:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, v6only)
    s.bind((host, 0) if family == socket.AF_INET else (host, 0, 0, 0))
    s.listen(8)
    return s


def listen_on(family, host, port):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.bind((host, port))
    s.listen(8)
    return s


def serve(sock, tag):
    """Answers every connection to `sock` with `tag`."""
    def loop():
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            conn.sendall(tag.encode())
            conn.close()
    threading.Thread(target=loop, daemon=True).start()
    return sock.getsockname()[1]


def reach(family, host, port, timeout=None):
    """The tag of the listener a connection to host:port reaches. A timeout makes Python connect
    without blocking and wait with poll, as PyTorch's store client does."""
    with socket.socket(family, socket.SOCK_STREAM) as c:
        c.settimeout(timeout)
        c.connect((host, port))
        return c.recv(64).decode()


def own_address(family, probe):
    """This machine's address on the route to `probe` (no packet is sent), or None."""
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((probe, 9))
            return s.getsockname()[0]
    except OSError:
        return None


def expect(what, got, want):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


# --- The cases, each run in a child with the library preloaded --------------------------------------

def case_any_moved():
    s = listen(socket.AF_INET, "0.0.0.0")
    expect("a listener on 0.0.0.0 is bound to", s.getsockname()[0], "127.0.0.1")


def case_alias_reaches():
    port = serve(listen(socket.AF_INET, "0.0.0.0"), "any")
    expect("a blocking connection to 127.0.1.1 reaches", reach(socket.AF_INET, "127.0.1.1", port), "any")
    expect("a connection with a timeout to 127.0.1.1 reaches", reach(socket.AF_INET, "127.0.1.1", port, 5), "any")
    expect("127.0.0.1 reaches", reach(socket.AF_INET, "127.0.0.1", port), "any")


def case_network_address_reaches():
    own = own_address(socket.AF_INET, "192.0.2.1")
    if own is None or own.startswith("127."):
        print("SKIP this machine has no IPv4 route off loopback")
        return
    port = serve(listen(socket.AF_INET, "0.0.0.0"), "any")
    expect(f"a connection to this machine's address {own} reaches", reach(socket.AF_INET, own, port, 5), "any")


def case_named_listener_kept():
    lo = listen(socket.AF_INET, "127.0.0.1")
    port = serve(lo, "lo")
    serve(listen_on(socket.AF_INET, "127.0.1.1", port), "alias")
    expect("127.0.1.1, which has a listener of its own, reaches", reach(socket.AF_INET, "127.0.1.1", port), "alias")
    expect("127.0.0.1 reaches", reach(socket.AF_INET, "127.0.0.1", port), "lo")


def case_refused_stays_refused():
    s = listen(socket.AF_INET, "127.0.0.1")
    port = s.getsockname()[1]
    s.close()
    try:
        reach(socket.AF_INET, "127.0.1.1", port)
    except ConnectionRefusedError:
        return
    raise AssertionError(f"a connection to 127.0.1.1:{port}, where nothing listens, was not refused")


def v6_listener(v6only, bound_to, tag):
    """A listener on :: (IPv6-only or dual-stack), checked to be bound to `bound_to`, answering
    with `tag`: its port, or None when this machine has no IPv6."""
    try:
        s = listen(socket.AF_INET6, "::", v6only=v6only)
    except OSError as e:
        print(f"SKIP no IPv6 here ({e})")
        return None
    expect(f"a listener on :: (IPV6_V6ONLY={v6only}) is bound to", s.getsockname()[0], bound_to)
    return serve(s, tag)


def reach_own_v6(port, tag):
    own = own_address(socket.AF_INET6, "2001:db8::1")
    if own is not None and own != "::1":
        expect(f"this machine's IPv6 address {own} reaches", reach(socket.AF_INET6, own, port, 5), tag)


def case_dual_stack():
    port = v6_listener(0, "::ffff:127.0.0.1", "dual")
    if port is None:
        return
    expect("IPv4 127.0.1.1 reaches", reach(socket.AF_INET, "127.0.1.1", port, 5), "dual")
    expect("v4-mapped ::ffff:127.0.1.1 reaches", reach(socket.AF_INET6, "::ffff:127.0.1.1", port, 5), "dual")
    reach_own_v6(port, "dual")


def case_v6only():
    port = v6_listener(1, "::1", "six")
    if port is None:
        return
    expect("::1 reaches", reach(socket.AF_INET6, "::1", port), "six")
    reach_own_v6(port, "six")


def case_mapped_any_moved():
    s = listen(socket.AF_INET6, "::ffff:0.0.0.0", v6only=0)
    expect("a listener on ::ffff:0.0.0.0 is bound to", s.getsockname()[0], "::ffff:127.0.0.1")


def case_udp_server_moved():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    s.bind(("0.0.0.0", port))
    expect("a UDP socket on 0.0.0.0 and a port of its own is bound to", s.getsockname()[0], "127.0.0.1")
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.bind(("0.0.0.0", 0))
    expect("a UDP client's ephemeral socket on 0.0.0.0:0 stays on", c.getsockname()[0], "0.0.0.0")


CASES = [
    ("a listener on every interface is bound to 127.0.0.1 instead", case_any_moved),
    ("a connection to 127.0.1.1 (a stock Debian host name) reaches it, blocking or not", case_alias_reaches),
    ("a connection to this machine's network address reaches it", case_network_address_reaches),
    ("a listener on a named address keeps its connections, beside one on 127.0.0.1", case_named_listener_kept),
    ("a port nothing listens on stays refused", case_refused_stays_refused),
    ("a dual-stack listener on :: is on v4-mapped loopback and reached from both families", case_dual_stack),
    ("an IPv6-only listener on :: is on ::1", case_v6only),
    ("a listener on ::ffff:0.0.0.0 (every IPv4 interface) is on ::ffff:127.0.0.1", case_mapped_any_moved),
    ("a UDP server on 0.0.0.0 is on 127.0.0.1; a client's ephemeral UDP socket is left", case_udp_server_moved),
]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--probe":
        try:
            next(fn for _, fn in CASES if fn.__name__ == sys.argv[2])()
        except (AssertionError, OSError) as e:
            print(f"{type(e).__name__}: {e}")
            return 1
        return 0
    lib = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "libtrainc-loopback.so")
    if not os.path.exists(lib):
        print(f"1..0 # SKIP {lib} is not built (sanitizer and fuzzing builds leave it out)")
        return 0
    env = dict(os.environ, LD_PRELOAD=lib)
    failed = 0
    for n, (name, fn) in enumerate(CASES, 1):
        try:
            p = subprocess.run([sys.executable, __file__, "--probe", fn.__name__], env=env,
                               capture_output=True, text=True, timeout=60)
            out, ok = (p.stdout + p.stderr).strip(), p.returncode == 0
        except subprocess.TimeoutExpired:
            out, ok = "no answer in 60s", False
        if ok and out.startswith("SKIP "):
            print(f"ok {n} - {name} # {out}")
        elif ok:
            print(f"ok {n} - {name}")
        else:
            failed += 1
            print(f"not ok {n} - {name}")
            for line in out.splitlines()[-15:]:
                print(f"# {line}")
    print(f"1..{len(CASES)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
