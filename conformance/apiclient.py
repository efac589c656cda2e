"""Starts the project's stack from its own scripts, or uses one already running, and talks to its
HTTP API (see the shared API.md).

The project's own copy of the shared conformance client (../shared/conformance/apiclient.py), with
one addition: `stack(url=...)` (or CONFORMANCE_URL in the environment) uses a gateway that is
already running at that URL, such as the published port of the containers in
scripts/container-test, instead of starting scripts/run-local; and an https:// URL (a TLS front
door: run-local --tls, the compose stack's nginx), verified against the system's CAs or the file
CONFORMANCE_CA_FILE names (a local CA's ca.pem). Run from the project's checkout. Python 3 standard
library only.
"""
import contextlib
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse

ROOT = os.getcwd()


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tls_context():
    """The TLS client context for https:// URLs: certificates and host names verified, against the
    CA file CONFORMANCE_CA_FILE names, else the system's."""
    return ssl.create_default_context(cafile=os.environ.get("CONFORMANCE_CA_FILE") or None)


class Client:
    """HTTP/1.1 to a gateway; with `tls` (an ssl.SSLContext) over TLS."""

    def __init__(self, port, token=None, host="127.0.0.1", tls=None):
        self.port = port
        self.token = token
        self.host = host
        self.tls = tls

    def call(self, method, path, body=None, token=None, headers=None, raw=None, timeout=15):
        if self.tls:
            conn = http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.tls)
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        h = dict(headers or {})
        tok = token if token is not None else self.token
        if tok:
            h["Authorization"] = "Bearer " + tok
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        text = r.read()
        conn.close()
        try:
            js = json.loads(text) if text else None
        except ValueError:
            js = None
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), js, text

    def register(self, username, password="correct-horse-9", **extra):
        body = {"email": f"{username}@example.com", "username": username, "password": password}
        body.update(extra)
        st, _, js, text = self.call("POST", "/v1/auth/register", body, token="")
        check(st == 201, f"register {username}: {st} {text[:200]!r}")
        return js["token"], js["user"]


class SSE:
    """Reads a Server-Sent Events stream on a thread; events land in .events as dicts."""

    def __init__(self, port, token, last_event_id=None, path="/v1/notifications/stream", host="127.0.0.1", tls=None):
        self.events, self.comments, self.closed, self.status = [], 0, threading.Event(), None
        self.sock = socket.create_connection((host, port), timeout=60)
        if tls:
            self.sock = tls.wrap_socket(self.sock, server_hostname=host)
        req = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\nAuthorization: Bearer {token}\r\n"
        if last_event_id is not None:
            req += f"Last-Event-ID: {last_event_id}\r\n"
        self.sock.sendall((req + "\r\n").encode())
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        f = self.sock.makefile("rb")
        try:
            line = f.readline()
            self.status = int(line.split()[1]) if line else None
            chunked = False
            while True:  # headers
                line = f.readline()
                if not line or line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower():
                    chunked = True
            buf = b""
            cur = {}
            while True:
                if chunked:
                    size_line = f.readline()
                    if not size_line:
                        break
                    size = int(size_line.split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        break
                    buf += f.read(size)
                    f.readline()
                else:
                    chunk = f.read1(65536) if hasattr(f, "read1") else f.readline()
                    if not chunk:
                        break
                    buf += chunk
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    raw = raw.rstrip(b"\r").decode("utf-8", "replace")
                    if raw == "":
                        if cur:
                            if "data" in cur:
                                try:
                                    cur["json"] = json.loads(cur["data"])
                                except ValueError:
                                    pass
                            self.events.append(cur)
                        cur = {}
                    elif raw.startswith(":"):
                        self.comments += 1
                    else:
                        k, _, v = raw.partition(":")
                        v = v[1:] if v.startswith(" ") else v
                        cur[k] = (cur[k] + "\n" + v) if k == "data" and k in cur else v
        except OSError:
            pass
        finally:
            self.closed.set()

    def wait_for(self, n, timeout=10):
        end = time.time() + timeout
        while time.time() < end and len(self.events) < n and not self.closed.is_set():
            time.sleep(0.02)
        return len(self.events) >= n

    def close(self):
        with contextlib.suppress(OSError):
            self.sock.close()


def parse_url(url):
    """(host, port) of an http:// or https:// URL such as http://127.0.0.1:8080."""
    u = urllib.parse.urlsplit(url)
    check(u.scheme in ("http", "https") and u.hostname, f"not an http:// or https:// URL: {url!r}")
    return u.hostname, u.port or (443 if u.scheme == "https" else 80)


def client_for(url):
    """A Client for the gateway at `url` (TLS for https://, see tls_context)."""
    host, port = parse_url(url)
    return Client(port, host=host, tls=tls_context() if url.startswith("https://") else None)


def wait_ready(c, deadline, why=lambda: ""):
    """Polls GET /readyz until 200; fails once `deadline` (time.time()) has passed."""
    while True:
        try:
            st, _, _, _ = c.call("GET", "/readyz", timeout=2)
            if st == 200:
                return
        except OSError:
            pass
        if time.time() > deadline:
            raise Fail("gateway never became ready" + why())
        time.sleep(0.5)


@contextlib.contextmanager
def stack(extra_args=(), ready_timeout=900, env_extra=None, url=None):
    """Starts scripts/run-local on a free port with a fresh DATA_DIR; yields (Client, info).

    With `url` (or CONFORMANCE_URL set), starts nothing: waits for /readyz at that gateway and
    yields a client for it (info has "host", "port" and "url"; nothing to stop afterwards).
    """
    url = url or os.environ.get("CONFORMANCE_URL")
    if url:
        c = client_for(url)
        wait_ready(c, time.time() + min(ready_timeout, 120), lambda: f" at {url}")
        yield c, {"host": c.host, "port": c.port, "url": url, "tls": c.tls}
        return
    check(os.access(os.path.join(ROOT, "scripts/run-local"), os.X_OK), "scripts/run-local is missing or not executable")
    port = free_port()
    data = tempfile.mkdtemp(prefix="conformance-data-")
    log = open(os.path.join(data, "run-local.log"), "wb")
    env = dict(os.environ, GATEWAY_PORT=str(port), DATA_DIR=data)
    env.update(env_extra or {})
    p = subprocess.Popen(["scripts/run-local", *extra_args], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    info = {"host": "127.0.0.1", "port": port, "url": f"http://127.0.0.1:{port}", "data": data, "proc": p, "log": log.name}
    try:
        end = time.time() + ready_timeout
        c = Client(port)
        while True:
            if p.poll() is not None:
                raise Fail(f"scripts/run-local exited with {p.returncode}: {tail(log.name)}")
            try:
                st, _, _, _ = c.call("GET", "/readyz", timeout=2)
                if st == 200:
                    break
            except OSError:
                pass
            if time.time() > end:
                raise Fail("gateway never became ready: " + tail(log.name))
            time.sleep(0.5)
        if "--demo" in extra_args:
            # demo data loads after /readyz turns 200; run-local prints the URL once it is in
            while "ready at" not in open(log.name, errors="replace").read():
                if p.poll() is not None or time.time() > end:
                    raise Fail("demo data never finished loading: " + tail(log.name))
                time.sleep(0.5)
        yield c, info
    finally:
        stop(info)


def stop(info, grace=10):
    p = info["proc"]
    if p.poll() is None:
        t0 = time.time()
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, signal.SIGTERM)
        try:
            p.wait(grace)
            info["stop_s"] = time.time() - t0
        except subprocess.TimeoutExpired:
            info["stop_s"] = None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    # anything the stack left behind in its session
    for pid in session_pids(p.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def session_pids(sid):
    out = subprocess.run(["ps", "-eo", "pid=,sid=,args="], capture_output=True, text=True).stdout
    pids = []
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[1] == str(sid) and parts[0] != str(sid):
            pids.append(int(parts[0]))
    return pids


def service_pid(info, name):
    out = subprocess.run(["ps", "-eo", "pid=,sid=,args="], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[1] == str(info["proc"].pid) and name in parts[2].split()[0]:
            return int(parts[0])
    return None


def tail(path, n=600):
    with contextlib.suppress(OSError):
        with open(path, "rb") as f:
            return f.read()[-n:].decode("utf-8", "replace").replace("\n", " | ")
    return ""


def q(s):
    return urllib.parse.quote(s, safe="")


def run(main):
    """Runs a check: prints its result last; exit 0 only if every check held."""
    import sys
    import traceback
    try:
        figure = main()
        print(figure or "ok")
        sys.exit(0)
    except Fail as e:
        print("FAIL:", e)
        sys.exit(1)
    except Exception as e:  # a crash of the check is a failure too, with its cause
        traceback.print_exc()
        print("FAIL: check crashed:", type(e).__name__, str(e)[:150])
        sys.exit(1)
