#!/usr/bin/env python3
"""The TCP sockets a process tree listens on, read from /proc (no ss or ps on a minimal root).

Usage: listeners.py PID
Prints one line per listening socket of PID or any of its descendants, `ADDRESS PORT PID ARGS`,
with `!` before the ones not on loopback, and exits 1 when there is one of those, 0 otherwise.
"""
import ipaddress
import os
import sys


def parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[1])  # state, then ppid


def tree(root):
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            children.setdefault(parent_of(int(name)), []).append(int(name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def socket_inodes(pid):
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def address(hex_addr):
    """/proc/net/tcp{,6} print each 32-bit word of the address in host byte order."""
    raw = bytes.fromhex(hex_addr)
    words = [raw[i:i + 4] for i in range(0, len(raw), 4)]
    if sys.byteorder == "little":
        words = [w[::-1] for w in words]
    return ipaddress.ip_address(b"".join(words))


def listening(root):
    """{inode: (address, port)} of every listening TCP socket in root's network namespace."""
    found = {}
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{root}/net/{table}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if cols[3] == "0A":  # TCP_LISTEN
                addr, port = cols[1].split(":")
                found[cols[9]] = (address(addr), int(port, 16))
    return found


def on_loopback(addr):
    mapped = getattr(addr, "ipv4_mapped", None)
    return addr.is_loopback or (mapped is not None and mapped.is_loopback)


def args_of(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return " ".join(f.read().decode(errors="replace").replace("\0", " ").split())
    except OSError:
        return "?"


def main():
    root = int(sys.argv[1])
    sockets = listening(root)
    exposed = 0
    for pid in tree(root):
        for inode in sorted(socket_inodes(pid) & sockets.keys()):
            addr, port = sockets[inode]
            addr = getattr(addr, "ipv4_mapped", None) or addr
            bad = not on_loopback(addr)
            exposed += bad
            print(f"{'! ' if bad else ''}{addr} {port} {pid} {args_of(pid)[:160]}")
    return 1 if exposed else 0


if __name__ == "__main__":
    sys.exit(main())
