"""Helpers shared by the Python stack tests (scripts/pg-failover-test, scripts/scale-fault-test):
failures, bounded polls, free ports, processes from /proc, and a watcher process that cleans up
after a test that is killed."""
import contextlib
import os
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PG_CLUSTER = os.path.join(ROOT, "scripts/pg-cluster")


class Fail(Exception):
    pass


def check(cond, what):
    """Fails with `what` unless `cond`; prints "ok: <what>" when it holds (`what` says what holds)."""
    if not cond:
        raise Fail(what)
    print(f"ok: {what}", flush=True)


def require(cond, failure):
    """Fails with `failure` (what went wrong, e.g. with a log's tail) unless `cond`; silent when it holds."""
    if not cond:
        raise Fail(failure)


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (bound together, then released)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def poll(what, cond, timeout, interval=0.1):
    """Calls cond() until it returns a truthy value (returned) or `timeout` seconds pass (Fail)."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise Fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


WATCHER = r"""
import os, shutil, signal, subprocess, sys
groups, clusters = [], []
for line in sys.stdin:
    kind, _, arg = line.strip().partition(" ")
    if kind == "done":
        sys.exit(0)
    (groups if kind == "group" else clusters).append(arg)
for g in groups:
    try:
        os.killpg(int(g), signal.SIGKILL)
    except (ProcessLookupError, ValueError):
        pass
for c in clusters:
    subprocess.run([sys.argv[1], "stop", c], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(os.path.join(c, "data"), ignore_errors=True)
"""


class Watcher:
    """A process that cleans up after this one if it dies without doing so: at the end of file
    on its stdin, it SIGKILLs the process groups and stops the clusters it was told about (and
    removes their data directories, keeping the logs)."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", WATCHER, PG_CLUSTER], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                     text=True)

    def tell(self, kind, arg):
        self.proc.stdin.write(f"{kind} {arg}\n")
        self.proc.stdin.flush()

    def dismiss(self):
        """Cleanup done: the watcher leaves without doing anything."""
        with contextlib.suppress(OSError):
            self.proc.stdin.write("done\n")
            self.proc.stdin.close()
        self.proc.wait(30)



def processes_of(postmaster):
    """The postmaster's pid and its children's (from /proc)."""
    pids = [postmaster]
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == postmaster:
                    pids.append(int(entry))
    return pids


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


SERVICES = ["AuthService", "ProfileService", "NotificationService"]
PREFIXES = ["AUTH", "PROFILE", "NOTIFICATION"]
ENDPOINTS = ["AUTH_RPC", "AUTH_EVENTS", "PROFILE_RPC", "PROFILE_EVENTS", "NOTIFICATION_RPC", "NOTIFICATION_EVENTS",
             "NOTIFICATION_DELIVERY"]


class RunLocal:
    """scripts/run-local in its own session, in DATA_DIR <tmp>/data, on free ports chosen here:
    `args` are run-local's (e.g. ["--storage", "postgres"] or ["--scale", "2"]), `scale` the N of
    --scale (0 without). `endpoints` holds the *_ENDPOINT variables given to it (every replica
    listed), for LoadTest's bulk import, which the stack allows (ALLOW_IMPORTS=1); `client_env`
    adds the DATA_DIR whose CURVE keys LoadTest needs to reach the services; `port` is the
    gateway's (nginx's with --scale)."""

    def __init__(self, tmp, args, scale=0):
        self.data = os.path.join(tmp, "data")
        self.scale = scale
        self.started = False  # run-local printed its "gateway ready at" line
        os.makedirs(self.data, exist_ok=True)
        self.log_path = os.path.join(tmp, "run-local.log")
        n = max(scale, 1)
        ports = free_ports(7 * n + n + 2)
        env = dict(os.environ, DATA_DIR=self.data, GATEWAY_HOST="127.0.0.1", LOG_LEVEL="info", ALLOW_IMPORTS="1")
        for k in ["DATABASE_URL"] + [f"{p}_DATABASE_URL" for p in PREFIXES]:
            env.pop(k, None)
        self.endpoints = {f"{name}_ENDPOINT": ",".join(f"tcp://127.0.0.1:{ports[7 * i + j]}" for i in range(n))
                          for j, name in enumerate(ENDPOINTS)}
        env.update(self.endpoints)
        self.client_env = dict(self.endpoints, DATA_DIR=self.data)
        self.gateway_ports = ports[7 * n:7 * n + n] if scale else [ports[-2]]
        if scale:
            env["GATEWAY_REPLICA_PORTS"] = ",".join(str(p) for p in self.gateway_ports)
        self.port = ports[-2]
        env["GATEWAY_PORT"] = str(self.port)
        env["POSTGRES_PORT"] = str(ports[-1])
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([os.path.join(ROOT, "scripts/run-local"), *args], cwd=ROOT, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)

    def tail(self, n=3000):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-n:]

    def names(self):
        """The processes run-local supervises, by pid-file name."""
        if not self.scale:
            return SERVICES + ["Gateway"]
        return [f"{s}-{i}" for s in SERVICES + ["Gateway"] for i in range(1, self.scale + 1)] + ["nginx"]

    def pid(self, name):
        with contextlib.suppress(OSError, ValueError):
            with open(os.path.join(self.data, "pids", f"{name}.pid")) as f:
                return int(f.read().strip())
        return None

    def ready(self):
        """Whether run-local runs, has printed its URL, every process in its pid files is alive
        and /readyz answers 200."""
        import urllib.request
        if self.proc.poll() is not None:
            raise Fail(f"run-local exited with {self.proc.returncode}:\n{self.tail()}")
        if not self.started:
            with open(self.log_path, "rb") as f:
                self.started = b"run-local: gateway ready at " in f.read()
            if not self.started:
                return False
        for name in self.names() + (["PostgreSQL"] if self.scale else []):
            pid = self.pid(name)
            if pid is None or not alive(pid):
                return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self):
        """SIGTERM (run-local stops everything), then SIGKILL of the session if it lingers."""
        import signal
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(60)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        self.log.close()


def cpu_ms(pid):
    """CPU time (user + system) the process has used, in ms (/proc/<pid>/stat); None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
