#!/usr/bin/env python3
"""scripts/bench replicas: LoadTest likes and celebrity on three stacks in one run, side by side.

  scripts/bench replicas [--rate R] [--duration S] [--streams K] [--users U] [--followers F] [--scale N]

The stacks, one after the other, each started by scripts/run-local in a fresh DATA_DIR on free
ports (release build):
  - sqlite:    one process per service, SQLite (run-local);
  - postgres:  one process per service, PostgreSQL (run-local --storage postgres);
  - scale N:   N replicas of each service and N gateways behind nginx (run-local --scale N).
On each: `LoadTest likes` (R likes/s for S s, K streams) and `LoadTest celebrity` (one post to F
followers, K of them streaming). Measured per run: the report's throughput, HTTP and delivery
latency, loss and duplicates; the CPU time each process of the stack used from the end of
LoadTest's setup to the end of the run (from /proc/<pid>/stat), per like answered or per
notification expected; and with --scale, each gateway's share
of the notifications written to streams (`events_delivered_total` from its /metrics), which must
follow its share of the streams (issue 20: neither of 2 gateways above 55 %).

Prints one table; writes it with every report to reports/bench-replicas-<timestamp>/.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from stacktest import ROOT, Fail, RunLocal, Watcher, cpu_ms, poll, require  # noqa: E402

LOADTEST = os.path.join(ROOT, ".build/release/LoadTest")
# What LoadTest logs when its setup is done and the load starts, by scenario.
MARKERS = {"likes": "posts created; opening", "celebrity": "streams open; posting"}


def delivered(port):
    """The gateway's events_delivered_total (0 when it does not answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return 0
    m = re.search(r"^events_delivered_total (\d+)", text, re.M)
    return int(m.group(1)) if m else 0


def cpu_snapshot(stack):
    return {name: cpu_ms(stack.pid(name)) or 0 for name in stack.names()}


def run_loadtest(stack, tmp, scenario, args, label):
    report_dir = os.path.join(tmp, f"{label}-{scenario}")
    common = ["--url", f"http://127.0.0.1:{stack.port}", "--users", str(args.users), "--streams", str(args.streams),
              "--users-file", os.path.join(tmp, f"users-{label}.json"), "--report-dir", report_dir]
    if scenario == "likes":
        extra = ["--rate", str(args.rate), "--duration", str(args.duration)]
    else:
        extra = ["--followers", str(args.followers)]
    before_delivered = [delivered(p) for p in stack.gateway_ports]
    log = os.path.join(tmp, f"{label}-{scenario}.log")
    # CPU is counted from the line LoadTest logs once its setup is done (users imported and
    # logged in: argon2 hashes in AuthService that are not the load), to the end of the run.
    marker = MARKERS[scenario].encode()
    with open(log, "wb") as out:
        proc = subprocess.Popen([LOADTEST, scenario, *common, *extra], cwd=ROOT,
                                env=dict(os.environ, **stack.client_env), stdout=out, stderr=subprocess.STDOUT)
        try:
            def set_up():
                if proc.poll() is not None:
                    return True
                with open(log, "rb") as f:
                    return marker in f.read()
            poll(f"{label} {scenario}: LoadTest's setup", set_up, 1800, 0.05)
            before_cpu = cpu_snapshot(stack)
            proc.wait(1800)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        r = proc
    after_cpu = cpu_snapshot(stack)
    after_delivered = [delivered(p) for p in stack.gateway_ports]
    path = os.path.join(report_dir, "report.json")
    with open(log, "rb") as f:
        require(os.path.exists(path), f"{label} {scenario}: no report (status {r.returncode}):\n{f.read()[-3000:].decode()}")
    with open(path) as f:
        report = json.load(f)
    cpu = {name: after_cpu[name] - before_cpu[name] for name in after_cpu}
    shares = [a - b for a, b in zip(after_delivered, before_delivered)]
    return report, cpu, shares


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=300)
    parser.add_argument("--duration", type=float, default=20)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--users", type=int, default=20000)
    parser.add_argument("--followers", type=int, default=10000)
    parser.add_argument("--scale", type=int, default=2)
    args = parser.parse_args()
    out_dir = os.path.join(ROOT, "reports", "bench-replicas-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    os.makedirs(out_dir, exist_ok=True)
    stacks = [("sqlite", [], 0), ("postgres", ["--storage", "postgres"], 0),
              (f"scale{args.scale}", ["--scale", str(args.scale)], args.scale)]
    rows = []
    for label, run_args, scale in stacks:
        tmp = tempfile.mkdtemp(prefix=f"bench-replicas-{label}-")
        os.chmod(tmp, 0o755)  # PostgreSQL runs as insta-pg under DATA_DIR when root
        watcher = Watcher()
        stack = RunLocal(tmp, run_args, scale)
        watcher.tell("group", stack.proc.pid)
        try:
            poll(f"run-local ({label}) to be ready", stack.ready, 900, 0.2)
            for scenario in ["likes", "celebrity"]:
                report, cpu, shares = run_loadtest(stack, tmp, scenario, args, label)
                d = report["delivery"]
                units = report["actionsOK"] if scenario == "likes" else max(d["expected"], 1)
                total_cpu = sum(cpu.values())
                row = {
                    "stack": label, "scenario": scenario, "ok": report["actionsOK"], "sent": report["actionsSent"],
                    "lost": d["lost"], "duplicates": d["duplicates"], "errors": report.get("errorsByStatus", {}),
                    "httpP99": report["httpLatencyMs"]["p99"], "deliveryP50": d["latencyMs"]["p50"],
                    "deliveryP99": d["latencyMs"]["p99"], "expected": d["expected"],
                    "cpuMsPerUnit": total_cpu / units, "cpuMsByProcess": {k: round(v, 1) for k, v in cpu.items()},
                    "unit": "like" if scenario == "likes" else "notification",
                    "persistedWithinMs": (report.get("persistence") or {}).get("allPersistedWithinMs"),
                }
                if scale:
                    total = sum(shares) or 1
                    row["gatewayShares"] = [round(s / total, 3) for s in shares]
                rows.append(row)
                shutil.copy(os.path.join(tmp, f"{label}-{scenario}", "report.json"),
                            os.path.join(out_dir, f"{label}-{scenario}.json"))
                print(f"bench-replicas: {label} {scenario} done", file=sys.stderr, flush=True)
        finally:
            stack.stop()
            watcher.dismiss()
            shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(out_dir, "table.json"), "w") as f:
        json.dump(rows, f, indent=2)
    print("| stack | scenario | ok/sent | lost | dup | HTTP p99 ms | delivery p50 / p99 ms | CPU ms per unit "
          "(all processes) | gateway shares |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        shares = ", ".join(f"{s:.0%}" for s in r.get("gatewayShares", [])) or "-"
        print(f"| {r['stack']} | {r['scenario']} | {r['ok']}/{r['sent']} | {r['lost']} | {r['duplicates']} | "
              f"{r['httpP99']:.1f} | {r['deliveryP50']:.1f} / {r['deliveryP99']:.1f} | "
              f"{r['cpuMsPerUnit']:.3f} per {r['unit']} | {shares} |")
    print("\nCPU ms by process (whole run):")
    for r in rows:
        print(f"  {r['stack']} {r['scenario']}: " + ", ".join(f"{k} {v}" for k, v in sorted(r["cpuMsByProcess"].items())))
    print(f"\nbench-replicas: reports in {out_dir}")


if __name__ == "__main__":
    try:
        main()
    except Fail as e:
        print(f"FAIL: {e}")
        sys.exit(1)
