#!/usr/bin/env python3
"""Loads the seeds' mock notification screen through the public HTTP API.

User `demo` (password `demo-password`) with one photo post and 100 notifications alternating
follow and like (as in the seed's NotificationViewModel.addMockData): actor 0 follows, actor 1
likes, ... ; demo follows back the actors of the first 50, so their follow notifications show
`following`. Running it again on the same data changes nothing.

Usage: scripts/demo-data.py [--url http://127.0.0.1:8080]
"""
import argparse
import concurrent.futures
import http.client
import json
import sys
import urllib.parse

IMG = "https://i.stack.imgur.com/GsDIl.jpg"  # the seed's photo URL


def call(url, method, path, body=None, token=None):
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, (json.loads(data) if data else None)


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
    st, post = call(url, "POST", "/v1/posts", {"postType": "photo", "mediaURL": IMG, "thumbnailURL": IMG,
                                               "caption": "Caption"}, token=demo)
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
