#!/usr/bin/env python3
"""Hostile shapes: specs the schema admits, built to make trainc's cluster model work hardest.

Each shape is written to a file and given to `trainc check`, `trainc plan --format json` and
`trainc compile`; each command must end within SECONDS of wall time and a peak resident set of MB
(both measured on the child alone, with os.wait4), and must not crash: exit 0 or 1 with a
diagnostic. A command past twice its bound is killed, so a regression fails here instead of holding
the suite. The shapes reach the schema's bounds: steps of 100,000 pods (Kubernetes' limit on an
Indexed Job) on one-node pools, 500 such steps, 100 pools of 1,000 nodes with 500 steps that name
no pool, 50 services and 50 clusters of 1,000 replicas, 50 clusters of 100 worker groups, TPU steps over 64 slices, and long-lived
pods of many sizes on a pool they almost fill (where first fit fails and the exact search runs) under
500 steps. TAP output.

Usage: worst_shapes.py TRAINC [--seconds S] [--mb MB] [--only NAME]
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

HEAD = "apiVersion: trainc/v1\nkind: TrainingSystem\nname: {name}\n"


def pools(entries):
    return "cluster:\n  pools:\n" + "".join(f"    {k}: {v}\n" for k, v in entries)


def steps(items):
    return "pipeline:\n" + "".join(f"  - {s}\n" for s in items)


def shape_one_step_cpu():
    # The 9-line spec: a step of 100,000 pods on one node.
    return (HEAD.format(name="hostile") + pools([("cpu", "{machine: e2-standard-8, nodes: 1}")]) +
            steps(["{name: a, image: i, command: [x], nodes: 100000, pool: cpu}"]))


def shape_one_step_gpu():
    # Whole-GPU pods: first fit and the search agree on each count, which made the old search cubic.
    return (HEAD.format(name="hostile") +
            pools([("gpu", "{machine: g2-standard-4, accelerator: {type: nvidia-l4, count: 1}, nodes: 1}")]) +
            steps(["{name: a, image: i, command: [x], nodes: 100000, gpus: 1, pool: gpu}"]))


def shape_many_steps():
    # 500 steps of 100,000 pods: a record per pod per step held 7.6 GB.
    return (HEAD.format(name="hostile") +
            pools([("gpu", "{machine: g2-standard-4, accelerator: {type: nvidia-l4, count: 1}, nodes: 1}")]) +
            steps([f"{{name: s{i}, image: i, command: [x], nodes: 100000, gpus: 1, pool: gpu}}" for i in range(500)]))


def shape_wide_cluster():
    # 100 pools of 1,000 nodes; 500 steps of 1,000 pods each that name no pool, so each tries pools.
    ps = [(f"p{i:02d}", "{machine: e2-standard-8, nodes: 1000}") for i in range(100)]
    ss = [f"{{name: s{i}, image: i, command: [x], nodes: 1000, resources: {{requests: {{cpu: '3', memory: 1Gi}}}}}}"
          for i in range(500)]
    return HEAD.format(name="hostile") + pools(ps) + steps(ss)


def shape_long_lived():
    # 50 Dask clusters of two worker groups of 1,000 pods each, over 10 pools of 1,000 nodes.
    out = HEAD.format(name="hostile") + pools([(f"p{i}", "{machine: n2-standard-8, nodes: 1000}") for i in range(10)])
    out += "clusters:\n"
    for i in range(50):
        out += (f"  c{i}:\n    engine: dask\n    image: ghcr.io/dask/dask:2024.12.1\n"
                f"    scheduler: {{pool: p{i % 10}}}\n    workers:\n")
        for g, cpu in (("a", "100m"), ("b", "250m")):
            out += (f"      {g}: {{pool: p{(i + len(g)) % 10}, replicas: 1000, "
                    f"resources: {{requests: {{cpu: {cpu}, memory: 64Mi}}}}}}\n")
    return out


def shape_tpu_slices():
    # A TPU pool of 64 slices of 64 hosts, and 500 multislice steps over all of them.
    sec = "security: {level: privileged, reason: multislice}"
    return (HEAD.format(name="hostile") +
            pools([("sys", "{machine: e2-standard-8}"),
                   ("tpu", "{machine: ct5lp-hightpu-4t, tpu: {topology: 16x16, slices: 64}}")]) +
            "queue: {}\n" +
            steps([f"{{name: s{i}, image: i, command: [x], pool: tpu, slices: 64, nodes: 64, {sec}}}"
                   for i in range(500)]))


def shape_search():
    # Worker groups of 61 sizes on a 32-node pool they nearly fill: first fit leaves some out and
    # the exact search runs, again for each of 500 steps that come on top.
    out = HEAD.format(name="hostile") + pools([("sys", "{machine: e2-standard-4}"),
                                               ("cpu", "{machine: e2-standard-8, nodes: 32, "
                                                       "taints: [{key: k, value: v, effect: NoSchedule}]}")])
    out += ("clusters:\n  d:\n    engine: dask\n    image: ghcr.io/dask/dask:2024.12.1\n    scheduler: {pool: sys}\n"
            "    workers:\n")
    for i in range(61):
        milli = 1900 + (i * 37) % 1700
        out += f"      w{i}: {{pool: cpu, replicas: 1, resources: {{requests: {{cpu: {milli}m, memory: 1Gi}}}}}}\n"
    out += steps([f"{{name: s{i}, image: i, command: [x], pool: cpu, resources: {{requests: {{cpu: 700m}}}}}}"
                  for i in range(500)])
    return out


def shape_many_groups():
    # 50 Dask clusters of 100 small worker groups (the schema's bounds): the runbook's capacity of
    # each group once summed every long-lived pod again, quadratic in the groups.
    out = HEAD.format(name="hostile") + pools([("cpu", "{machine: n2-standard-8, nodes: 1000}")])
    out += "clusters:\n"
    for i in range(50):
        out += (f"  c{i}:\n    engine: dask\n    image: ghcr.io/dask/dask:2024.12.1\n"
                f"    scheduler: {{pool: cpu}}\n    workers:\n")
        for g in range(100):
            out += f"      w{g}: {{pool: cpu, replicas: 1, resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}\n"
    return out


# Each shape, and what trainc must say of it: "" (it is right), or a phrase every error has.
PENDING = "would stay Pending"
SHAPES = {
    "one step of 100000 pods on one node": (shape_one_step_cpu, PENDING),
    "one GPU step of 100000 pods on one node": (shape_one_step_gpu, PENDING),
    "500 steps of 100000 pods": (shape_many_steps, PENDING),
    "100 pools of 1000 nodes, 500 steps naming none": (shape_wide_cluster, ""),
    "50 clusters of 2000 pods each": (shape_long_lived, ""),
    "TPU steps over 64 slices": (shape_tpu_slices, ""),
    "long-lived pods the exact search must place, under 500 steps": (shape_search, ""),
    "50 clusters of 100 worker groups": (shape_many_groups, ""),
}


def run(cmd, limit):
    """(exit code or None when killed, wall seconds, peak RSS in MB, stderr)."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        killed = False
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > limit:
                os.killpg(p.pid, signal.SIGKILL)
                killed = True
            time.sleep(0.01)
        wall = time.monotonic() - start
        err.seek(0)
        tail = err.read().decode(errors="replace")
    code = None if killed else os.waitstatus_to_exitcode(status)
    return code, wall, usage.ru_maxrss / 1024, tail


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trainc")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--mb", type=float, default=300.0)
    ap.add_argument("--only")
    a = ap.parse_args()
    n = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, (make, expect) in SHAPES.items():
            if a.only and a.only not in name:
                continue
            spec = os.path.join(tmp, "spec.yaml")
            with open(spec, "w") as f:
                f.write(make())
            size = os.path.getsize(spec)
            for verb, args in (("check", ["check", spec]), ("plan", ["plan", spec, "--format", "json"]),
                               ("compile", ["compile", spec, "-o", os.path.join(tmp, "out")])):
                n += 1
                code, wall, mb, tail = run([a.trainc] + args, 2 * a.seconds)
                problems = []
                if code is None:
                    problems.append(f"killed after {wall:.1f} s")
                elif code not in (0, 1):
                    problems.append(f"exit {code}")
                elif code == 1 and not expect:
                    problems.append("refused a spec that is right")
                elif code == 0 and expect and verb != "plan":
                    problems.append(f"accepted; expected errors saying '{expect}'")
                errors = [line for line in tail.splitlines() if ": error: " in line]
                if code == 1 and verb != "plan" and not errors:
                    problems.append("exit 1 without a diagnostic")
                if expect and any(expect not in line for line in errors):
                    problems.append(f"an error does not say '{expect}': " +
                                    next(line for line in errors if expect not in line)[:200])
                if wall > a.seconds:
                    problems.append(f"took {wall:.2f} s (bound {a.seconds:g} s)")
                if mb > a.mb:
                    problems.append(f"peak RSS {mb:.0f} MB (bound {a.mb:g} MB)")
                status = "not ok" if problems else "ok"
                print(f"{status} {n} - {name}: trainc {verb} ({size} bytes of spec): exit {code}, {wall:.2f} s, "
                      f"{mb:.0f} MB")
                if problems:
                    failed += 1
                    print("# " + "; ".join(problems))
                    for line in tail.strip().splitlines()[-4:]:  # the end of what it said
                        print("#   " + line[:300])
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
