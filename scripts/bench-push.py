#!/usr/bin/env python3
"""scripts/bench push: LoadTest push against scripts/run-local and a stand-in APNs built for load.

  scripts/bench push [--followers F] [--owners O] [--likers L] [--rate R] [--duration S] [--users U]
                     [--storage sqlite|postgres] [--scale N]

What it starts, on free ports, in a temporary directory:
  - a test CA, a server certificate for 127.0.0.1 signed by it, and a P-256 provider key (.p8),
    made with the openssl CLI;
  - the load stand-in: nginx serving HTTP/2 over TLS on 127.0.0.1. Each `POST /3/device/<token>`
    is answered 200 and logged with its arrival time and body (`$msec`, `$request_body`; nginx
    reads the body with `echo_read_request_body` from Debian's libnginx-mod-http-echo, which
    scripts/install-deps installs; without the module the request is proxied to a second nginx
    server that answers 200, and the run says so: that hop costs the stand-in about 78 µs of
    CPU per push more, on the same cores as the services).
    It does not check the provider token or the headers: scripts/apns-standin.py (the tests'
    stand-in) does, but it costs about 240 µs of CPU per push in Python's h2, too slow to take
    100,000 pushes in seconds beside the stack on this machine;
  - scripts/run-local with APNS_URL, APNS_CA_FILE, APNS_KEY_FILE, APNS_KEY_ID, APNS_TEAM_ID and
    APNS_TOPIC pointing at it.
Then `LoadTest push` (see its usage): F followers of the celebrity with one device each, O like
recipients with one device each, likes at R/s for S s, the celebrity posting a third of the way
in. LoadTest reads the stand-in's log and reports pushes per second, the latency from the action
to the APNs request (p50/p99) for likes and for the celebrity's followers, lost and duplicated.

Issue 22's target on this machine: the 100,000-follower post reaches the stand-in within 10 s
(p99) and likes to others meanwhile within 1 s (p99). The report goes to
reports/bench-push-<timestamp>/ (LoadTest's report and a copy of the stand-in's log); the
temporary directory (databases, keys, session tokens) is deleted at the end.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from stacktest import ROOT, Fail, RunLocal, Watcher, free_ports, poll, require  # noqa: E402

LOADTEST = os.path.join(ROOT, ".build/release/LoadTest")
TOPIC = "com.example.insta"
TEAM_ID = "TEAMBENCH01"
KEY_ID = "KEYBENCH01"
# Debian's libnginx-mod-http-echo (scripts/install-deps): `echo_read_request_body` lets nginx read
# and log the body without proxying it to a second server.
ECHO_MODULE = "/usr/lib/nginx/modules/ngx_http_echo_module.so"


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_keys(d):
    """A CA, a server certificate for 127.0.0.1 and a P-256 provider key in `d`."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", "/CN=bench APNs CA", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", f"{d}/server.key", "-out", f"{d}/server.csr")
    with open(f"{d}/san.cnf", "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", f"{d}/server.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", f"{d}/san.cnf", "-out", f"{d}/server.pem")
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", f"{d}/AuthKey.p8")


def start_standin(d):
    """nginx as the load stand-in; returns (process, port, log path)."""
    port, upstream = free_ports(2)
    for sub in ["body", "proxy", "fcgi", "uwsgi", "scgi"]:
        os.makedirs(f"{d}/{sub}", exist_ok=True)
    log = f"{d}/apns.log"
    if os.path.exists(ECHO_MODULE):
        # Read the body and answer in this server: no second hop (about half of the stand-in's
        # CPU per push went to proxying to the second server).
        preamble = f"load_module {ECHO_MODULE};"
        answer = "      echo_read_request_body;\n      echo -n '';"
    else:
        print(f"bench-push: {ECHO_MODULE} is missing (scripts/install-deps installs it): the stand-in "
              "proxies each body to a second server, which adds to its CPU per push", file=sys.stderr)
        preamble = ""
        answer = '      proxy_pass http://ok/;\n      proxy_http_version 1.1;\n      proxy_set_header Connection "";'
    conf = f"""
{preamble}
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log;
user root;
events {{ worker_connections 4096; }}
http {{
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  log_format apns '$msec $request_uri $request_body';
  client_body_buffer_size 8k;
  client_max_body_size 8k;
  upstream ok {{ server 127.0.0.1:{upstream}; keepalive 32; }}
  server {{
    listen 127.0.0.1:{port} ssl http2;
    ssl_certificate {d}/server.pem;
    ssl_certificate_key {d}/server.key;
    http2_max_concurrent_streams 1000;
    keepalive_timeout 3600s;
    keepalive_requests 100000000;
    access_log {log} apns buffer=256k flush=100ms;
    location /3/device/ {{
{answer}
    }}
  }}
  server {{
    listen 127.0.0.1:{upstream};
    access_log off;
    keepalive_requests 100000000;
    location / {{ return 200; }}
  }}
}}
"""
    with open(f"{d}/nginx.conf", "w") as f:
        f.write(conf)
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen([nginx, "-c", f"{d}/nginx.conf", "-p", d], stdout=subprocess.DEVNULL,
                            stderr=open(f"{d}/nginx.stderr", "wb"), start_new_session=True)

    def listening():
        import socket
        require(proc.poll() is None, f"nginx exited: {open(f'{d}/nginx.stderr').read()}")
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0
    poll("the nginx stand-in to listen", listening, 30, 0.05)
    return proc, port, log


def tree_cpu_seconds(pid):
    """User + system CPU seconds of `pid` and its children (nginx's master and worker), from
    /proc/<pid>/stat fields 14 and 15 (proc(5)), in clock ticks."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    pids = [pid]
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            pids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / tick


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--followers", type=int, default=100000)
    parser.add_argument("--owners", type=int, default=100)
    parser.add_argument("--rate", type=float, default=50)
    parser.add_argument("--duration", type=float, default=30)
    parser.add_argument("--likers", type=int, default=20)
    parser.add_argument("--users", type=int, default=0, help="default: followers + owners + likers + 1")
    parser.add_argument("--storage", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--scale", type=int, default=0)
    args = parser.parse_args()
    users = args.users or args.followers + args.owners + args.likers + 1
    out_dir = os.path.join(ROOT, "reports", "bench-push-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    os.makedirs(out_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="bench-push-")
    os.chmod(tmp, 0o755)  # PostgreSQL runs as insta-pg under DATA_DIR when root
    keys = os.path.join(tmp, "keys")
    os.makedirs(keys)
    make_keys(keys)
    standin, port, apns_log = start_standin(keys)
    os.environ.update({
        "APNS_URL": f"https://127.0.0.1:{port}", "APNS_CA_FILE": f"{keys}/ca.pem",
        "APNS_KEY_FILE": f"{keys}/AuthKey.p8", "APNS_KEY_ID": KEY_ID, "APNS_TEAM_ID": TEAM_ID,
        "APNS_TOPIC": TOPIC,
    })
    run_args = (["--storage", "postgres"] if args.storage == "postgres" else []) + \
        (["--scale", str(args.scale)] if args.scale else [])
    watcher = Watcher()
    watcher.tell("group", standin.pid)
    stack = RunLocal(tmp, run_args, args.scale)
    watcher.tell("group", stack.proc.pid)
    status = 1
    try:
        poll("run-local to be ready", stack.ready, 900, 0.2)
        report_dir = os.path.join(out_dir, "push")
        cmd = [LOADTEST, "push", "--url", f"http://127.0.0.1:{stack.port}", "--users", str(users),
               "--followers", str(args.followers), "--owners", str(args.owners), "--likers", str(args.likers),
               "--rate", str(args.rate),
               "--duration", str(args.duration), "--streams", "0", "--apns-log", apns_log,
               "--users-file", os.path.join(tmp, "users.json"), "--report-dir", report_dir]
        print("bench-push: " + " ".join(cmd[1:]), file=sys.stderr, flush=True)
        before = tree_cpu_seconds(standin.pid)
        status = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, **stack.client_env)).returncode
        standin_cpu = tree_cpu_seconds(standin.pid) - before
        pushes = sum(1 for _ in open(apns_log))
        if pushes:
            # Not ours (APNs runs elsewhere), but on this machine it competes for the same cores.
            print(f"bench-push: the stand-in (nginx) used {standin_cpu:.1f} s of CPU during the run, "
                  f"{standin_cpu / pushes * 1e6:.0f} µs per push ({pushes} pushes logged)", file=sys.stderr)
        shutil.copy(apns_log, os.path.join(out_dir, "apns.log"))
    except Fail as failure:
        print(f"bench-push: FAILED: {failure}\n{stack.tail()}", file=sys.stderr)
    finally:
        stack.stop()
        standin.terminate()
        standin.wait(10)
        watcher.dismiss()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"bench-push: reports in {out_dir}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
