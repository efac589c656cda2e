#!/usr/bin/env python3
"""What TLS costs at the front door, in one run (scripts/bench tls): CPU per request of nginx with
and without TLS, in front of the same gateway.

Starts scripts/run-local --scale 1 --tls (PostgreSQL, one replica of each service, one gateway, nginx
serving HTTPS with the deployments' TLS settings) on free loopback ports, then a second nginx with the
same configuration minus TLS (plain HTTP on another port, same gateway, same upstream settings). wrk
(Debian's, HTTP/1.1; it speaks TLS but not HTTP/2) then drives GET /healthz (answered by the gateway:
the cheapest request that crosses the front) through each, alternately, ROUNDS times:
  keep-alive     -c CONNECTIONS long-lived connections (what an app does: one connection, many
                 requests): TLS adds the record encryption of each request and answer;
  new connection `Connection: close`, a new TCP (and TLS) connection per request: TLS adds a full
                 handshake (ECDHE P-256/X25519 and the server's ECDSA P-256 signature; wrk resumes no
                 session).
For each it reads the CPU time (user + system, /proc) of the nginx master and workers, and of the
gateway, before and after, and prints CPU per request in microseconds and requests per second; the
TLS cost is the difference of the medians. Usage:

  scripts/bench tls [--duration 8] [--connections 16] [--rounds 3]
"""
import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (after the command's closing paren)
        except (OSError, IndexError, ValueError):
            pass
    return total / TICK


def tree(master):
    """The nginx master and its workers."""
    pids = [master]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1]) == master:
                    pids.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return pids


def wrk(url, duration, connections, close):
    cmd = ["wrk", "-t", "1", "-c", str(connections), "-d", f"{duration}s", url]
    if close:
        cmd[1:1] = ["-H", "Connection: close"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: (.*)", out)
    return requests, (int(errors.group(1)) if errors else 0), (sock.group(1) if sock else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    opts = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("bench-tls: needs wrk (Debian package wrk: scripts/bench tls installs it)")
    data = tempfile.mkdtemp(prefix="bench-tls-")
    ports = free_ports(10)
    tls_port, plain_port = ports[0], ports[9]
    env = dict(os.environ, DATA_DIR=data, GATEWAY_HOST="127.0.0.1", GATEWAY_PORT=str(tls_port),
               GATEWAY_REPLICA_PORTS=str(ports[1]), LOG_LEVEL="warning")
    for i, var in enumerate(["AUTH_RPC", "AUTH_EVENTS", "PROFILE_RPC", "PROFILE_EVENTS", "NOTIFICATION_RPC",
                             "NOTIFICATION_EVENTS", "NOTIFICATION_DELIVERY"]):
        env[f"{var}_ENDPOINT"] = f"tcp://127.0.0.1:{ports[2 + i]}"
    log = open(os.path.join(data, "run-local.log"), "wb")
    stack = subprocess.Popen([os.path.join(ROOT, "scripts/run-local"), "--scale", "1", "--tls"], cwd=ROOT, env=env,
                             stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    plain = None
    try:
        end = time.time() + 900
        while "gateway ready at https://" not in open(log.name, errors="replace").read():
            if stack.poll() is not None or time.time() > end:
                sys.exit("bench-tls: run-local --scale 1 --tls did not start: " + open(log.name, errors="replace").read()[-2000:])
            time.sleep(0.2)
        # The same nginx configuration without TLS, on another port, in front of the same gateway.
        nginx_dir = os.path.join(data, "nginx")
        conf = open(os.path.join(nginx_dir, "nginx.conf")).read()
        conf = re.sub(rf"listen 127\.0\.0\.1:{tls_port} ssl http2", f"listen 127.0.0.1:{plain_port}", conf)
        conf = "\n".join(line for line in conf.splitlines()
                         if not re.match(r"\s*(ssl_certificate|include .*tls\.conf|error_page 497|# --tls|# the local CA)", line))
        for name in ("nginx.pid", "error.log", "access.log"):
            conf = conf.replace(f'"{nginx_dir}/{name}"', f'"{nginx_dir}/plain-{name}"')
        open(os.path.join(nginx_dir, "plain.conf"), "w").write(conf)
        plain = subprocess.Popen(["nginx", "-p", nginx_dir + "/", "-c", os.path.join(nginx_dir, "plain.conf")],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        end = time.time() + 30
        while subprocess.run(["curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{plain_port}/healthz"]).returncode != 0:
            if plain.poll() is not None or time.time() > end:
                sys.exit(f"bench-tls: the plain nginx did not start: {plain.stderr.read().decode() if plain.poll() is not None else ''}")
            time.sleep(0.1)
        tls_master = int(open(os.path.join(data, "pids", "nginx.pid")).read())
        gateway = int(open(os.path.join(data, "pids", "Gateway-1.pid")).read())
        fronts = {"https": (f"https://127.0.0.1:{tls_port}/healthz", tree(tls_master)),
                  "http": (f"http://127.0.0.1:{plain_port}/healthz", tree(plain.pid))}
        results = {}
        for close in (False, True):
            mode = "new connection" if close else "keep-alive"
            for _ in range(opts.rounds):
                for name, (url, pids) in fronts.items():
                    n0, g0, t0 = cpu_seconds(pids), cpu_seconds([gateway]), time.time()
                    requests, errors, sock = wrk(url, opts.duration, opts.connections, close)
                    n1, g1, t1 = cpu_seconds(pids), cpu_seconds([gateway]), time.time()
                    results.setdefault((mode, name), []).append(
                        ((n1 - n0) / requests * 1e6, (g1 - g0) / requests * 1e6, requests / (t1 - t0), errors, sock))
        print(f"bench-tls: nginx {subprocess.run(['nginx', '-v'], capture_output=True, text=True).stderr.strip().split('/')[-1]}, "
              f"wrk -t1 -c{opts.connections} -d{opts.duration}s GET /healthz, {opts.rounds} rounds each (medians)")
        print(f"{'connections':<15}{'front':<7}{'nginx CPU/req':>15}{'gateway CPU/req':>17}{'req/s':>10}  errors")
        for mode in ("keep-alive", "new connection"):
            for name in ("http", "https"):
                rows = results[(mode, name)]
                print(f"{mode:<15}{name:<7}{statistics.median(r[0] for r in rows):>12.1f} us"
                      f"{statistics.median(r[1] for r in rows):>14.1f} us{statistics.median(r[2] for r in rows):>10.0f}"
                      f"  {sum(r[3] for r in rows)} non-2xx{'; sockets ' + rows[-1][4] if rows[-1][4] else ''}")
            added = statistics.median(r[0] for r in results[(mode, "https")]) - statistics.median(r[0] for r in results[(mode, "http")])
            print(f"{'':<15}TLS adds {added:.1f} us of nginx CPU per request ({mode})")
    finally:
        if plain and plain.poll() is None:
            plain.send_signal(signal.SIGTERM)
            plain.wait(10)
        if stack.poll() is None:
            stack.send_signal(signal.SIGTERM)
            stack.wait(60)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
