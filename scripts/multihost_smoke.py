#!/usr/bin/env python3
"""Checks for scripts/multihost-test (Python 3 standard library only; libzmq through ctypes).

  probe  --keys DIR --rogue DIR --service NAME=HOST:PORT ...
         CURVE at the wire: a DEALER with the gateway's authorised key gets an ops.ping reply from
         each service's ROUTER; one with an unknown key and one speaking plain text get nothing.
  before --url URL --state FILE   the smoke walk: register, post, like, comment, follow, the
                                  notifications list and the Server-Sent Events stream
  during --url URL --state FILE   with NotificationService down: likes and comments still succeed
                                  (ProfileService's outbox keeps their events)
  after  --url URL --state FILE   with it back: every notification exactly once, in seq order,
                                  and the stream resumes after Last-Event-ID with nothing repeated

Each prints one line per step and exits 1 with "FAIL: ..." when a check does not hold.
The HTTP calls follow ../shared/API.md.
"""
import argparse
import contextlib
import ctypes
import ctypes.util
import http.client
import json
import socket
import sys
import threading
import time
import urllib.parse
import uuid

IMG = "https://images.example.com/p/multihost.jpg"
PASSWORD = "correct-horse-9"


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def say(text):
    print(f"multihost: {text}", flush=True)


# --- HTTP --------------------------------------------------------------------------------------

class Client:
    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80

    def call(self, method, path, body=None, token=None, headers=None, timeout=15):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            text = r.read()
        finally:
            conn.close()
        try:
            js = json.loads(text) if text else None
        except ValueError:
            js = None
        return r.status, js, text

    def register(self, username):
        body = {"email": f"{username}@example.com", "username": username, "password": PASSWORD}
        st, js, text = self.call("POST", "/v1/auth/register", body)
        check(st == 201 and js and js.get("token"), f"register {username}: {st} {text[:200]!r}")
        return js["token"]

    def notifications(self, token):
        st, js, text = self.call("GET", "/v1/notifications?limit=100", token=token)
        check(st == 200 and js is not None, f"GET /v1/notifications: {st} {text[:200]!r}")
        return js["items"]


class SSE:
    """Reads GET /v1/notifications/stream on a thread; events land in .events as dicts."""

    def __init__(self, client, token, last_event_id=None):
        self.events, self.closed, self.status, self.headers_done = [], threading.Event(), None, False
        self.sock = socket.create_connection((client.host, client.port), timeout=60)
        req = (f"GET /v1/notifications/stream HTTP/1.1\r\nHost: {client.host}\r\n"
               f"Accept: text/event-stream\r\nAuthorization: Bearer {token}\r\n")
        if last_event_id is not None:
            req += f"Last-Event-ID: {last_event_id}\r\n"
        self.sock.sendall((req + "\r\n").encode())
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        f = self.sock.makefile("rb")
        try:
            line = f.readline()
            self.status = int(line.split()[1]) if line else None
            chunked = False
            while True:
                line = f.readline()
                if not line or line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower():
                    chunked = True
            self.headers_done = True
            buf, cur = b"", {}
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
                    chunk = f.read1(65536)
                    if not chunk:
                        break
                    buf += chunk
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    raw = raw.rstrip(b"\r").decode("utf-8", "replace")
                    if raw == "":
                        if "data" in cur:
                            with contextlib.suppress(ValueError):
                                cur["json"] = json.loads(cur["data"])
                            self.events.append(cur)
                        cur = {}
                    elif not raw.startswith(":"):
                        k, _, v = raw.partition(":")
                        v = v[1:] if v.startswith(" ") else v
                        cur[k] = (cur[k] + "\n" + v) if k == "data" and k in cur else v
        except OSError:
            pass
        finally:
            self.closed.set()

    def wait_open(self, timeout=10):
        """Waits for the response headers (the stream is then subscribed); checks 200."""
        end = time.time() + timeout
        while time.time() < end and self.headers_done is False and not self.closed.is_set():
            time.sleep(0.02)
        check(self.status == 200, f"GET /v1/notifications/stream: status {self.status}")

    def wait_for(self, n, timeout=10):
        end = time.time() + timeout
        while time.time() < end and len(self.events) < n and not self.closed.is_set():
            time.sleep(0.02)
        return len(self.events) >= n

    def close(self):
        with contextlib.suppress(OSError):
            self.sock.close()


def summary(items):
    return [(n["type"], n["actor"]["username"], n["text"]) for n in items]


# --- the walk ----------------------------------------------------------------------------------

def before(args):
    c = Client(args.url)
    tag = uuid.uuid4().hex[:6]
    a, b, cc = f"mh{tag}a", f"mh{tag}b", f"mh{tag}c"
    A, B, C = c.register(a), c.register(b), c.register(cc)
    say(f"registered {a}, {b}, {cc} through the gateway")
    stream = SSE(c, A)
    stream.wait_open()
    st, post, text = c.call("POST", "/v1/posts", {"postType": "photo", "mediaURL": IMG, "thumbnailURL": IMG,
                                                   "caption": "across hosts"}, token=A)
    check(st == 201 and post and post.get("id"), f"POST /v1/posts: {st} {text[:200]!r}")
    st, js, text = c.call("PUT", f"/v1/posts/{post['id']}/like", token=B)
    check(st == 200 and js["liked"] is True and js["likeCount"] == 1, f"like: {st} {text[:200]!r}")
    check(stream.wait_for(1, 15), f"the like was not streamed (stream status {stream.status})")
    st, _, text = c.call("POST", f"/v1/posts/{post['id']}/comments", {"text": "nice!"}, token=B)
    check(st == 201, f"comment: {st} {text[:200]!r}")
    check(stream.wait_for(2, 15), "the comment was not streamed")
    st, js, text = c.call("PUT", f"/v1/users/{a}/follow", {}, token=B)
    check(st == 200 and js["followState"] == "following", f"follow: {st} {text[:200]!r}")
    check(stream.wait_for(3, 15), f"stream delivered {len(stream.events)} of 3")
    stream.close()
    types = [e.get("json", {}).get("type") for e in stream.events[:3]]
    check(types == ["like", "comment", "follow"], f"stream order {types}")
    seqs = [int(e["id"]) for e in stream.events[:3]]
    check(seqs == sorted(set(seqs)), f"stream ids not strictly increasing: {seqs}")
    expected = [["follow", b, f"{b} started following you."], ["comment", b, f"{b} commented: nice!"],
                ["like", b, f"{b} liked your photo."]]
    got = summary(c.notifications(A))
    check([list(x) for x in got] == expected, f"notifications list {got}")
    say("smoke walk: post, like, comment, follow; list and stream agree (3 notifications)")
    with open(args.state, "w") as f:
        json.dump({"users": [a, b, cc], "tokens": [A, B, C], "post": post["id"], "lastSeq": seqs[-1],
                   "expected": expected}, f)


def during(args):
    c = Client(args.url)
    s = json.load(open(args.state))
    (a, b, cc), (A, B, C), post = s["users"], s["tokens"], s["post"]
    st, js, text = c.call("PUT", f"/v1/posts/{post}/like", token=C)
    check(st == 200 and js["liked"] is True and js["likeCount"] == 2, f"like while down: {st} {text[:200]!r}")
    st, _, text = c.call("POST", f"/v1/posts/{post}/comments", {"text": "while down"}, token=C)
    check(st == 201, f"comment while down: {st} {text[:200]!r}")
    st, _, text = c.call("POST", f"/v1/posts/{post}/comments", {"text": "still here"}, token=B)
    check(st == 201, f"second comment while down: {st} {text[:200]!r}")
    st, js, text = c.call("GET", "/v1/notifications", token=A)
    check(st in (503, 504), f"GET /v1/notifications with NotificationService down: {st} (expected 503/504)")
    s["missed"] = [["like", cc, f"{cc} liked your photo."], ["comment", cc, f"{cc} commented: while down"],
                   ["comment", b, f"{b} commented: still here"]]
    with open(args.state, "w") as f:
        json.dump(s, f)
    say(f"while NotificationService was down: like + 2 comments accepted; notifications list {st}")


def after(args):
    c = Client(args.url)
    s = json.load(open(args.state))
    (a, b, cc), (A, B, C) = s["users"], s["tokens"]
    want = [list(x) for x in reversed(s["missed"])] + s["expected"]   # newest first
    end, items = time.time() + 30, []
    while time.time() < end:
        items = c.notifications(A)
        if len(items) >= len(want):
            break
        time.sleep(0.2)
    got = [list(x) for x in summary(items)]
    check(got == want, f"after the restart: {got}\n  expected {want}")
    ids = [n["id"] for n in items]
    seqs = [n["seq"] for n in items]
    check(len(set(ids)) == len(ids), f"duplicate notification ids {ids}")
    check(seqs == sorted(set(seqs), reverse=True), f"seq not strictly decreasing newest-first: {seqs}")
    say(f"after the restart: all {len(items)} notifications, each once, seq {min(seqs)}..{max(seqs)}")

    stream = SSE(c, A, last_event_id=s["lastSeq"])
    stream.wait_open()
    check(stream.wait_for(3, 15), f"resumed stream delivered {len(stream.events)} of the 3 missed")
    st, js, text = c.call("PUT", f"/v1/users/{a}/follow", {}, token=C)
    check(st == 200 and js["followState"] == "following", f"follow after the restart: {st} {text[:200]!r}")
    check(stream.wait_for(4, 15), f"resumed stream delivered {len(stream.events)} of 4")
    stream.close()
    streamed = [[e["json"]["type"], e["json"]["actor"]["username"], e["json"]["text"]] for e in stream.events[:4]]
    check(streamed == [list(x) for x in s["missed"]] + [["follow", cc, f"{cc} started following you."]],
          f"resumed stream {streamed}")
    sseq = [int(e["id"]) for e in stream.events[:4]]
    check(sseq == sorted(set(sseq)) and sseq[0] > s["lastSeq"], f"resumed stream ids {sseq} after {s['lastSeq']}")
    say("stream resumed after Last-Event-ID: the 3 missed, then a live follow; nothing repeated")


# --- CURVE at the wire (libzmq through ctypes) --------------------------------------------------

ZMQ_DEALER, ZMQ_SNDMORE, ZMQ_RCVMORE, ZMQ_LINGER, ZMQ_RCVTIMEO = 5, 2, 13, 17, 27
ZMQ_CURVE_PUBLICKEY, ZMQ_CURVE_SECRETKEY, ZMQ_CURVE_SERVERKEY = 48, 49, 50


def load_zmq():
    path = ctypes.util.find_library("zmq") or "libzmq.so.5"
    z = ctypes.CDLL(path, use_errno=True)
    z.zmq_ctx_new.restype = ctypes.c_void_p
    z.zmq_socket.restype = ctypes.c_void_p
    z.zmq_socket.argtypes = [ctypes.c_void_p, ctypes.c_int]
    z.zmq_setsockopt.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    z.zmq_getsockopt.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
    z.zmq_connect.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    z.zmq_send.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    z.zmq_recv.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    z.zmq_close.argtypes = [ctypes.c_void_p]
    z.zmq_ctx_term.argtypes = [ctypes.c_void_p]
    return z


def ping(z, endpoint, curve=None, timeout_ms=3000):
    """Sends ops.ping over a DEALER; returns the reply JSON or None when nothing came back.
    curve: (server public, client public, client secret) Z85 keys, or None for plain text."""
    ctx = z.zmq_ctx_new()
    sock = z.zmq_socket(ctx, ZMQ_DEALER)
    try:
        def setopt_int(opt, value):
            v = ctypes.c_int(value)
            z.zmq_setsockopt(sock, opt, ctypes.byref(v), ctypes.sizeof(v))

        def setopt_key(opt, key):
            buf = ctypes.create_string_buffer(key.encode())  # 40 Z85 characters + NUL
            check(z.zmq_setsockopt(sock, opt, buf, 40) == 0, "zmq_setsockopt (CURVE key)")

        setopt_int(ZMQ_LINGER, 0)
        setopt_int(ZMQ_RCVTIMEO, timeout_ms)
        if curve:
            setopt_key(ZMQ_CURVE_SERVERKEY, curve[0])
            setopt_key(ZMQ_CURVE_PUBLICKEY, curve[1])
            setopt_key(ZMQ_CURVE_SECRETKEY, curve[2])
        check(z.zmq_connect(sock, endpoint.encode()) == 0, f"zmq_connect {endpoint}")
        body = json.dumps({"v": 1, "id": uuid.uuid4().hex, "type": "ops.ping",
                           "deadline": int(time.time() * 1000) + timeout_ms, "trace": "multihost", "body": {}}).encode()
        z.zmq_send(sock, None, 0, ZMQ_SNDMORE)
        z.zmq_send(sock, body, len(body), 0)
        frames = []
        buf = ctypes.create_string_buffer(1 << 16)
        while True:
            n = z.zmq_recv(sock, buf, len(buf), 0)
            if n < 0:
                return None  # EAGAIN after RCVTIMEO: no reply
            frames.append(buf.raw[:min(n, len(buf))])
            more, size = ctypes.c_int(0), ctypes.c_size_t(ctypes.sizeof(ctypes.c_int))
            z.zmq_getsockopt(sock, ZMQ_RCVMORE, ctypes.byref(more), ctypes.byref(size))
            if not more.value:
                break
        return json.loads(frames[-1])
    finally:
        z.zmq_close(sock)
        z.zmq_ctx_term(ctx)


def probe(args):
    z = load_zmq()

    def key(path):
        with open(path) as f:
            return f.read().strip()

    client_pub, client_sec = key(f"{args.keys}/public/gateway.pub"), key(f"{args.keys}/gateway.key")
    rogue_pub, rogue_sec = key(f"{args.rogue}/gateway.pub"), key(f"{args.rogue}/gateway.key")
    for spec in args.service:
        name, _, hostport = spec.partition("=")
        endpoint = f"tcp://{hostport}"
        server = key(f"{args.keys}/public/{name}.pub")
        reply = ping(z, endpoint, (server, client_pub, client_sec), timeout_ms=10000)
        check(reply is not None and reply.get("body", {}).get("service") == name,
              f"{name}: no ops.ping reply with the authorised key ({reply})")
        check(ping(z, endpoint, (server, rogue_pub, rogue_sec)) is None, f"{name} answered a client with an unknown key")
        check(ping(z, endpoint, None) is None, f"{name} answered a plain-text client")
        say(f"{name} at {endpoint}: authorised key answered; unknown key and plain text got nothing")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=["probe", "before", "during", "after"])
    ap.add_argument("--url")
    ap.add_argument("--state")
    ap.add_argument("--keys")
    ap.add_argument("--rogue")
    ap.add_argument("--service", action="append", default=[])
    args = ap.parse_args()
    try:
        {"probe": probe, "before": before, "during": during, "after": after}[args.step](args)
    except Fail as e:
        print(f"multihost: FAIL: {e}", flush=True)
        sys.exit(1)
    except (OSError, KeyError, TypeError, ValueError) as e:
        print(f"multihost: FAIL: {args.step} crashed: {type(e).__name__}: {e}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
