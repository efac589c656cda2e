#!/usr/bin/env python3
"""Loads the seeds' mock notification screen through the public HTTP API.

User `demo` (password `demo-password`) with a profile photo, one photo post and 100 notifications alternating
follow and like (as in the seed's NotificationViewModel.addMockData): actor 0 follows, actor 1
likes, ... ; demo follows back the actors of the first 50, so their follow notifications show
`following`. The pictures are PNGs drawn here at load time and uploaded as raw bytes
(`PUT /v1/me/profile/photo`, `POST /v1/media`), so the post and the photo are served by the
backend itself (`/media/{id}/{variant}`). Running it again on the same data changes nothing.

Usage: scripts/demo-data.py [--url http://127.0.0.1:8080]
An https:// URL (run-local --tls) is verified against the system's CAs or SSL_CERT_FILE.
"""
import argparse
import concurrent.futures
import http.client
import json
import ssl
import sys
import struct
import urllib.parse
import zlib


def connect(url, timeout):
    """A connection to the gateway of `url`: HTTPS (verified; SSL_CERT_FILE names a local CA) or HTTP."""
    u = urllib.parse.urlparse(url)
    if u.scheme == "https":
        return http.client.HTTPSConnection(u.hostname, u.port, timeout=timeout, context=ssl.create_default_context())
    return http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)


def call(url, method, path, body=None, token=None):
    conn = connect(url, 30)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, (json.loads(data) if data else None)


def png(width, height, hue):
    """An RGB PNG (RFC 2083) of soft diagonal bands, drawn here so the demo needs no files."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = bytearray()
    for y in range(height):
        rows.append(0)
        for x in range(width):
            t = (x + y) * 255 // (width + height)
            rows += bytes(((t + hue) % 256, (255 - t + hue // 2) % 256, (x * 255 // width + hue * 3) % 256))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(bytes(rows), 6)) + chunk(b"IEND", b""))


def upload(url, method, path, data, token):
    conn = connect(url, 60)
    conn.request(method, path, body=data, headers={"Content-Type": "image/png", "Authorization": "Bearer " + token})
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, (json.loads(body) if body else None)


def account(url, username, password, name):
    st, js = call(url, "POST", "/v1/auth/register",
                  {"email": f"{username}@example.com", "username": username, "password": password, "name": name})
    if st == 201:
        return js["token"], True
    st, js = call(url, "POST", "/v1/auth/login", {"login": username, "password": password})
    if st != 200:
        sys.exit(f"demo-data: cannot log in as {username}: {st} {js}")
    return js["token"], False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    args = ap.parse_args()
    url = args.url
    demo, created = account(url, "demo", "demo-password", "Demo User")
    if not created:
        print("demo-data: user demo already exists; nothing to load")
        return
    st, me = upload(url, "PUT", "/v1/me/profile/photo", png(320, 320, 40), demo)
    if st != 200:
        sys.exit(f"demo-data: profile photo failed: {st} {me}")
    st, media = upload(url, "POST", "/v1/media", png(1080, 1080, 160), demo)
    if st != 201:
        sys.exit(f"demo-data: upload failed: {st} {media}")
    st, post = call(url, "POST", "/v1/posts", {"postType": "photo", "mediaId": media["id"], "caption": "Caption"},
                    token=demo)
    if st != 201:
        sys.exit(f"demo-data: post failed: {st} {post}")

    def actor(i):
        token, _ = account(url, f"friend_{i:03d}", "friend-password", f"Friend {i}")
        return i, token

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        actors = dict(pool.map(actor, range(100)))
    # One at a time, x = 99 down to 0, so the newest-first list reads x = 0, 1, 2, ... like the seed's.
    for i in reversed(range(100)):
        if i % 2 == 0:
            st, js = call(url, "PUT", f"/v1/users/demo/follow", {}, token=actors[i])
        else:
            st, js = call(url, "PUT", f"/v1/posts/{post['id']}/like", None, token=actors[i])
        if st != 200:
            sys.exit(f"demo-data: action {i} failed: {st} {js}")
    for i in range(0, 50, 2):
        st, js = call(url, "PUT", f"/v1/users/friend_{i:03d}/follow", {}, token=demo)
        if st != 200:
            sys.exit(f"demo-data: follow-back {i} failed: {st} {js}")
    print("demo-data: user demo / demo-password with 100 notifications loaded")


if __name__ == "__main__":
    main()
