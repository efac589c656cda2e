#!/usr/bin/env python3
"""Checks for scripts/container-test against a running gateway (Python 3 standard library only).

  seed     --url URL --state FILE   two users, a post, a like, a comment and a follow through the
                                    gateway; waits until the three notifications are listed; uploads
                                    a PNG made here and fetches two of its variants; writes the
                                    sessions, the post, the notifications and the media to FILE
  verify   --url URL --state FILE [--after WHAT]
                                    after the stack was stopped and started again (or WHAT): the
                                    sessions still authenticate (AuthService's volume), the post and
                                    the counts are there (ProfileService's), the same notifications
                                    with the same ids (NotificationService's), the media served
                                    the same (its volume), and a new comment
                                    is streamed and listed (the event path works after the restart);
                                    FILE is updated with it, so verify can run again later
  outage   --url URL --state FILE   while the database is down (PostgreSQL killed): a read and a
                                    write of each service that stores something answer 503 (with
                                    Retry-After) within 2 s each
  loadtest --report DIR [--allow-http-errors]
                                    reads a LoadTest report.json: prints delivery (expected, lost,
                                    duplicates) and fails unless nothing was lost or duplicated,
                                    some notifications were expected and no stream closed early;
                                    HTTP errors fail it too unless --allow-http-errors

Each prints one line per step and exits 1 with "FAIL: ..." when a check does not hold.
"""
import argparse
import json
import os
import struct
import sys
import time
import uuid
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
from apiclient import SSE, Fail, check, client_for  # noqa: E402

IMG = "https://images.example.com/p/container.jpg"


def png(width, height):
    """An RGB PNG of a gradient, made here (PNG spec: signature, IHDR, one IDAT, IEND)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + bytes(v for x in range(width) for v in (x * 255 // width, y * 255 // height, 128))
                    for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def fetch_media(c, path):
    """GET a media path (no token): status, content type, ETag and the body's length."""
    st, h, _, body = c.call("GET", path, token="")
    return st, h.get("content-type"), h.get("etag"), len(body)


def say(text):
    print(f"container-test: {text}", flush=True)


def client(url):
    """A client for the stack's front door (https:// with CONFORMANCE_CA_FILE: its local CA)."""
    return client_for(url)


def get(c, path, token, seconds=60):
    """GET, asked again while the gateway answers 502/503/504 (a service busy or still reconnecting
    is not data lost), until `seconds` have passed."""
    end = time.time() + seconds
    while True:
        st, h, js, text = c.call("GET", path, token=token)
        if st not in (502, 503, 504) or time.time() > end:
            return st, h, js, text
        time.sleep(0.5)


def notifications(c, token):
    st, _, js, text = get(c, "/v1/notifications?limit=100", token)
    check(st == 200 and js is not None, f"GET /v1/notifications: {st} {text[:200]!r}")
    return js["items"]


def listed_until(c, token, n, seconds=20):
    """The notifications list once it holds at least n items (polled), or what it holds at the deadline."""
    end, items = time.time() + seconds, []
    while time.time() < end:
        items = notifications(c, token)
        if len(items) >= n:
            break
        time.sleep(0.2)
    return items


def brief(items):
    return [[n["id"], n["type"], n["text"]] for n in items]


def seed(args):
    c = client(args.url)
    tag = uuid.uuid4().hex[:6]
    a, b = f"ct{tag}a", f"ct{tag}b"
    A, _ = c.register(a, name="Container A")
    B, _ = c.register(b)
    st, _, post, text = c.call("POST", "/v1/posts", {"postType": "photo", "mediaURL": IMG, "thumbnailURL": IMG,
                                                     "caption": "kept on a volume"}, token=A)
    check(st == 201 and post and post.get("id"), f"POST /v1/posts: {st} {text[:200]!r}")
    st, _, js, text = c.call("PUT", f"/v1/posts/{post['id']}/like", token=B)
    check(st == 200 and js["likeCount"] == 1, f"like: {st} {text[:200]!r}")
    st, _, _, text = c.call("POST", f"/v1/posts/{post['id']}/comments", {"text": "still here?"}, token=B)
    check(st == 201, f"comment: {st} {text[:200]!r}")
    st, _, js, text = c.call("PUT", f"/v1/users/{a}/follow", {}, token=B)
    check(st == 200 and js["followState"] == "following", f"follow: {st} {text[:200]!r}")
    items = listed_until(c, A, 3)
    check(len(items) == 3, f"{a} has {len(items)} notifications listed, expected 3: {brief(items)}")
    st, _, prof, text = get(c, f"/v1/users/{a}", B)
    check(st == 200, f"GET /v1/users/{a}: {st} {text[:200]!r}")
    # An upload: decoded and resized by libvips in ProfileService's container, kept on its media volume.
    st, _, media, text = c.call("POST", "/v1/media", token=A, headers={"Content-Type": "image/png"}, raw=png(400, 300))
    check(st == 201 and media and media.get("kind") == "photo", f"POST /v1/media: {st} {text[:200]!r}")
    served = {v: fetch_media(c, media[v]) for v in ("url", "thumbnailURL")}
    for v, (st, ctype, etag, n) in served.items():
        check(st == 200 and ctype == "image/jpeg" and etag and n > 0, f"GET {media[v]}: {st} {ctype} {etag} {n} bytes")
    with open(args.state, "w") as f:
        json.dump({"users": [a, b], "tokens": [A, B], "post": post["id"], "notifications": brief(items),
                   "counts": prof["counts"], "media": {media[v]: served[v] for v in served}}, f)
    say(f"seeded: {a} and {b} logged in, 1 post, like + comment + follow, 3 notifications listed; "
        f"a PNG uploaded ({media['width']}x{media['height']}), its variants served")


def send(c, method, path, body, token, seconds=60):
    """A write, sent again while the gateway answers 503 (a service whose database connection
    was found dead reconnects on a later call), until `seconds` have passed."""
    end = time.time() + seconds
    while True:
        st, h, js, text = c.call(method, path, body, token=token)
        if st != 503 or time.time() > end:
            return st, h, js, text
        time.sleep(0.5)


def outage(args):
    c = client(args.url)
    s = json.load(open(args.state))
    (a, b), (A, B), post = s["users"], s["tokens"], s["post"]
    # Each needs one service's database: AuthService (a login), ProfileService (a comment, a
    # profile read), NotificationService (the list).
    calls = [("POST", "/v1/auth/login", {"login": a, "password": "correct-horse-9"}, ""),
             ("POST", f"/v1/posts/{post}/comments", {"text": "while the database is down"}, B),
             ("GET", f"/v1/users/{a}/posts", None, B),
             ("GET", "/v1/notifications?limit=100", None, A)]
    seen = []
    for method, path, body, token in calls:
        t0 = time.time()
        try:
            st, h, _, text = c.call(method, path, body, token=token, timeout=10)
        except OSError as e:
            raise Fail(f"{method} {path} while the database is down: {e!r} after {time.time() - t0:.1f} s")
        took = time.time() - t0
        seen.append(f"{method} {path.split('?')[0]} {st} in {took * 1000:.0f} ms")
        check(st == 503 and h.get("retry-after"), f"{method} {path} while the database is down: {st} {text[:200]!r} "
              f"(Retry-After {h.get('retry-after')}), expected 503 with Retry-After")
        check(took < 2, f"{method} {path} while the database is down took {took:.1f} s (expected an answer within 2 s)")
    say("while the database is down: " + ", ".join(seen))


def open_stream(c, token, seconds=60):
    """GET /v1/notifications/stream, opened again while it answers 502/503/504, until its status
    line is 200 (the gateway has subscribed it then) or `seconds` have passed."""
    end = time.time() + seconds
    while True:
        stream = SSE(c.port, token, host=c.host, tls=c.tls)
        while stream.status is None and not stream.closed.is_set() and time.time() < end:
            time.sleep(0.02)
        if stream.status == 200:
            return stream
        stream.close()
        check(stream.status in (502, 503, 504, None) and time.time() < end,
              f"GET /v1/notifications/stream: status {stream.status}")
        time.sleep(0.5)


def verify(args):
    c = client(args.url)
    s = json.load(open(args.state))
    (a, b), (A, B), post = s["users"], s["tokens"], s["post"]
    for user, token in ((a, A), (b, B)):
        st, _, me, text = get(c, "/v1/me", token)
        check(st == 200 and me["username"] == user, f"the session of {user} did not survive: GET /v1/me {st} {text[:200]!r}")
    st, _, grid, text = get(c, f"/v1/users/{a}/posts", B)
    check(st == 200 and [p["id"] for p in grid["items"]] == [post], f"{a}'s posts after the restart: {st} {text[:300]!r}")
    st, _, prof, text = get(c, f"/v1/users/{a}", B)
    check(st == 200 and prof["counts"] == s["counts"], f"{a}'s counts {prof.get('counts') if prof else text[:200]!r}, were {s['counts']}")
    items = notifications(c, A)
    check(brief(items) == s["notifications"], f"notifications after the restart: {brief(items)}\n  were {s['notifications']}")
    for path, before in s["media"].items():
        after = list(fetch_media(c, path))
        check(after == before, f"GET {path} after the restart: {after}, was {before}")
    after = args.after
    say(f"after {after}: both sessions valid, the post and counts {s['counts']} kept, the same {len(items)} notifications (same ids), "
        f"the uploaded media served the same")
    stream = open_stream(c, A)
    n = len(s["notifications"])
    try:
        st, _, _, text = send(c, "POST", f"/v1/posts/{post}/comments", {"text": f"after {after}"}, B)
        check(st == 201, f"comment after {after}: {st} {text[:200]!r}")
        check(stream.wait_for(1, 15), f"the new comment was not streamed after {after}")
        check(stream.events[0]["json"]["text"] == f"{b} commented: after {after}", f"streamed {stream.events[0]}")
    finally:
        stream.close()
    items = listed_until(c, A, n + 1)
    check(len(items) == n + 1 and brief(items)[1:] == s["notifications"], f"list after a new comment: {brief(items)}")
    s["notifications"] = brief(items)
    with open(args.state, "w") as f:
        json.dump(s, f)
    say(f"after {after}: a new comment is streamed and listed on top of the kept ones")


def loadtest(args):
    path = os.path.join(args.report, "report.json")
    check(os.path.exists(path), f"no {path} (LoadTest did not finish its report)")
    r = json.load(open(path))
    d = r["delivery"]
    errors = r.get("errorsByStatus") or {}
    closed = r.get("streamsClosedEarly", 0)
    lat = d.get("latencyMs") or {}
    p99, worst = lat.get("p99"), lat.get("max")
    line = (f"{r['scenario']}: {r.get('actionsOK')}/{r.get('actionsSent')} actions 2xx, notifications expected "
            f"{d['expected']} (streamed {d.get('streamed', 0)}, listed {d.get('listed', 0)}), lost {d['lost']}, "
            f"duplicates {d['duplicates']}, unexpected {d.get('unexpected', 0)}, HTTP errors {errors or 'none'}, "
            f"streams closed early {closed}"
            + (f", streamed delivery p99 {p99:.0f} ms, max {worst:.0f} ms" if lat.get("count") else ""))
    check(d["expected"] > 0, f"nothing expected ({line})")
    check(d["lost"] == 0 and d["duplicates"] == 0, f"loss or duplicates ({line})")
    check(closed == 0, f"streams closed early ({line})")
    check(args.allow_http_errors or not errors, f"HTTP errors ({line})")
    say(line)
    if lat.get("count") and worst > 5000:
        say(f"note: {r['scenario']}: streamed notifications were held up to {worst / 1000:.0f} s (delivered late, "
            "none lost): live delivery stalled for a while")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=["seed", "verify", "outage", "loadtest"])
    ap.add_argument("--after", default="stop/start")
    ap.add_argument("--url")
    ap.add_argument("--state")
    ap.add_argument("--report")
    ap.add_argument("--allow-http-errors", action="store_true")
    args = ap.parse_args()
    try:
        {"seed": seed, "verify": verify, "outage": outage, "loadtest": loadtest}[args.step](args)
    except Fail as e:
        print(f"FAIL: {e}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
