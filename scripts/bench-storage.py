#!/usr/bin/env python3
"""The storage benchmark on both engines in one run (scripts/bench storage [--million]).

Runs `Benchmarks notification --import-big` (10,000 follows through the RPC, the big star's
followers imported in bulk, like notifications written, fan-out to 10,000 and 100,000 followers;
with --million also 1,000,000) and `Benchmarks profile` (profile-header reads,
post creations, likes written) on SQLite and then on PostgreSQL (TEST_STORAGE_ENGINE=postgres: a
server the benchmark starts, as the tests do), and prints one table with the PostgreSQL/SQLite
ratio. For rates a ratio above 1 favours PostgreSQL; for times, below 1.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, ".build/release/Benchmarks")

# (label, benchmark, regex over its output, unit) — the first group is the figure.
FIGURES = [
    ("follows (10,000 notification.follow)", "notification", r"^follows:\s+([\d.]+) /s", "/s"),
    ("like notifications written", "notification", r"^notifications written:\s+([\d.]+) /s", "/s"),
    ("fan-out to 10,000", "notification", r"^fan-out to\s+10000:\s+([\d.]+) s", "s"),
    ("fan-out to 100,000", "notification", r"^fan-out to\s+100000:\s+([\d.]+) s", "s"),
    ("fan-out to 1,000,000", "notification", r"^fan-out to\s+1000000:\s+([\d.]+) s", "s"),
    ("profile-header reads", "profile", r"^profile reads:\s+([\d.]+) /s", "/s"),
    ("post creations", "profile", r"^post creations:\s+([\d.]+) /s", "/s"),
    ("likes written (profile.set_like)", "profile", r"^likes written:\s+([\d.]+) /s", "/s"),
]


def run(engine, name, args):
    env = dict(os.environ, TEST_STORAGE_ENGINE=engine, LOG_LEVEL="warning")
    print(f"-- {name} on {engine}: Benchmarks {name} {' '.join(args)}", flush=True)
    out = subprocess.run([BENCH, name, *args], env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True).stdout
    sys.stdout.write(out)
    return out


def main():
    million = "--million" in sys.argv[1:]
    notification_args = ["--followers", "1000000" if million else "100000", "--small", "10000", "--likes", "20000",
                         "--import-big"]
    results = {}
    for engine in ("sqlite", "postgres"):
        outputs = {
            "notification": run(engine, "notification", notification_args),
            "profile": run(engine, "profile", ["--likes", "20000"]),
        }
        if million:
            outputs["notification"] += run(engine, "notification", ["--followers", "100000", "--small", "10000", "--likes", "1000", "--import-big"])
        for label, bench, pattern, _ in FIGURES:
            m = re.search(pattern, outputs[bench], re.M)
            if m:
                results[(label, engine)] = float(m.group(1))
    print()
    print("PostgreSQL/SQLite: for a rate (/s) above 1 favours PostgreSQL; for a time (s) below 1 does.")
    print(f"| {'figure':38} | {'SQLite':>12} | {'PostgreSQL':>12} | PostgreSQL/SQLite |")
    print(f"|{'-' * 40}|{'-' * 14}|{'-' * 14}|-------------------|")
    for label, _, _, unit in FIGURES:
        s, p = results.get((label, "sqlite")), results.get((label, "postgres"))
        if s is None and p is None:
            continue
        fmt = (lambda v: f"{v:,.0f} {unit}") if unit == "/s" else (lambda v: f"{v:.2f} {unit}")
        ratio = f"{p / s:.2f}x" if s and p else "-"
        print(f"| {label:38} | {fmt(s) if s is not None else '-':>12} | {fmt(p) if p is not None else '-':>12} | {ratio:>17} |")


if __name__ == "__main__":
    main()
