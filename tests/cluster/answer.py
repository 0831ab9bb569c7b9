#!/usr/bin/env python3
"""Runs a command at a terminal (a pseudo-terminal this script holds) and types ANSWER once the
command asks: when its output matches PROMPT. Output goes to stdout as the command writes it;
the exit code is the command's, 124 when it outlives --timeout, 125 when it ends or times out
without having asked (then the answer was never typed).

Typing the answer only after the prompt shows is what a person does; writing it ahead into the
terminal (script(1) fed by a pipe) leaves it to whatever reads the terminal first, or to a flush.

Usage: answer.py [--timeout S] PROMPT ANSWER -- COMMAND...
"""
import argparse
import os
import pty
import re
import select
import signal
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--timeout", type=float, default=420)
    ap.add_argument("prompt", help="a regular expression the command's output matches when it asks")
    ap.add_argument("answer", help="the line typed")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command")
    prompt = re.compile(args.prompt)

    pid, fd = pty.fork()
    if pid == 0:  # the child: its own session, the terminal its controlling one (pty.fork does both)
        try:
            os.execvp(command[0], command)
        except OSError as e:
            os.write(2, f"answer.py: cannot run {command[0]}: {e}\n".encode())
            os._exit(127)

    seen = b""
    asked = False
    deadline = time.monotonic() + args.timeout
    out = sys.stdout.buffer
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.killpg(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
            out.write(f"\nanswer.py: {' '.join(command)} ran past {args.timeout:g} s"
                      f"{'' if asked else ' without asking'}\n".encode())
            return 124 if asked else 125
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: every process holding the terminal is gone
            chunk = b""
        if not chunk:
            break
        out.write(chunk)
        out.flush()
        if not asked:
            seen = (seen + chunk)[-4096:]
            if prompt.search(seen.decode("utf-8", "replace")):
                os.write(fd, args.answer.encode() + b"\n")
                asked = True
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        code = 128 - code
    if not asked:
        out.write(f"\nanswer.py: {' '.join(command)} ended without asking\n".encode())
        out.flush()
        return 125 if code == 0 else code
    return code


if __name__ == "__main__":
    sys.exit(main())
