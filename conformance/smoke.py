#!/usr/bin/env python3
"""Contract smoke walk over the shared API.md: the seeds' screens, end to end, through
scripts/run-local or through a gateway that is already running.

Usage, from the project's root:
    python3 conformance/smoke.py                  # starts scripts/run-local on a free port
    python3 conformance/smoke.py --url URL        # walks the gateway at URL (e.g. http://127.0.0.1:8080;
                                                  # https://: CONFORMANCE_CA_FILE names a local CA)
Exit 0 when every step holds; the failing step is printed otherwise. A subset of the contract:
passing it is necessary, not sufficient. The project's own copy of ../shared/conformance/smoke.py
(same walk; --url added; the users' names are fresh each run, so it can walk a stack that already
has data).
"""
import argparse, os, sys, time, uuid
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apiclient import check, run, stack, SSE

IMG = "https://images.example.com/p/1.jpg"


def main():
    ap = argparse.ArgumentParser(description="contract smoke walk")
    ap.add_argument("--url", help="walk the gateway already running at URL instead of starting scripts/run-local")
    args = ap.parse_args()
    with stack(url=args.url) as (c, info):
        tag = uuid.uuid4().hex[:6]
        a, b = f"s{tag}a", f"s{tag}b"
        A, me = c.register(a, name="Ann")
        B, _ = c.register(b)
        check(me["username"] == a and me["email"] == f"{a}@example.com", f"register reply: {me}")
        st, _, js, _ = c.call("POST", "/v1/auth/login", {"login": a, "password": "correct-horse-9"}, token="")
        check(st == 200 and js["token"], f"login: {st}")
        st, _, form, _ = c.call("GET", "/v1/me/profile/edit", token=A)
        check(st == 200 and form["sections"][0]["fields"][0]["key"] == "name", f"edit form: {st}")
        st, _, me, _ = c.call("PATCH", "/v1/me/profile", {"bio": "hello"}, token=A)
        check(st == 200 and me["bio"] == "hello", f"edit profile: {st}")
        stream = SSE(info["port"], A, host=info["host"], tls=info.get("tls"))
        time.sleep(0.3)
        st, _, post, _ = c.call("POST", "/v1/posts", {"postType": "photo", "mediaURL": IMG, "thumbnailURL": IMG, "caption": "first",
                                                        "taggedUsernames": [b]}, token=A)
        check(st == 201 and post["taggedUsers"][0]["username"] == b, f"post: {st}")
        st, _, lk, _ = c.call("PUT", f"/v1/posts/{post['id']}/like", token=B)
        check(st == 200 and lk["liked"] is True and lk["likeCount"] == 1, f"like: {st} {lk}")
        check(stream.wait_for(1, 10), "like not streamed")
        st, _, _, _ = c.call("POST", f"/v1/posts/{post['id']}/comments", {"text": "nice!"}, token=B)
        check(st == 201, f"comment: {st}")
        check(stream.wait_for(2, 10), "comment not streamed")
        st, _, fs, _ = c.call("PUT", f"/v1/users/{a}/follow", {}, token=B)
        check(st == 200 and fs["followState"] == "following", f"follow: {st}")
        check(stream.wait_for(3, 10), f"stream delivered {len(stream.events)} of 3")
        seqs = [int(e["id"]) for e in stream.events]
        check(seqs == sorted(seqs) and len(set(seqs)) == len(seqs), f"stream ids not increasing: {seqs}")
        check([e["json"]["type"] for e in stream.events[:3]] == ["like", "comment", "follow"], "stream order")
        st, _, nl, _ = c.call("GET", "/v1/notifications", token=A)
        check([n["text"] for n in nl["items"][:3]] == [f"{b} started following you.", f"{b} commented: nice!", f"{b} liked your photo."],
              f"notification texts: {[n['text'] for n in nl['items'][:3]]}")
        check(nl["items"][0]["followState"] == "not_following", "followState before follow-back")
        c.call("PUT", f"/v1/users/{b}/follow", {}, token=A)
        st, _, nl, _ = c.call("GET", "/v1/notifications", token=A)
        check(nl["items"][0]["followState"] == "following", "followState after follow-back")
        st, _, prof, _ = c.call("GET", f"/v1/users/{a}", token=B)
        cnt = prof["counts"]
        check((cnt["followers"], cnt["following"], cnt["posts"]) == (1, 1, 1) and prof["followState"] == "following", f"profile header: {prof}")
        st, _, grid, _ = c.call("GET", f"/v1/users/{a}/posts", token=B)
        check([p["id"] for p in grid["items"]] == [post["id"]], "grid tab")
        st, _, tagged, _ = c.call("GET", f"/v1/users/{b}/tagged", token=A)
        check([p["id"] for p in tagged["items"]] == [post["id"]], "tagged tab")
        st, _, s, _ = c.call("GET", "/v1/settings", token=A)
        check([it["id"] for it in s["sections"][2]["items"]] == ["log_out"], "settings")
        st, _, out, _ = c.call("POST", "/v1/auth/logout", {}, token=A)
        check(st == 200 and out["loggedOut"] is True, f"logout: {st}")
        check(c.call("GET", "/v1/me", token=A)[0] == 401, "token alive after logout")
        check(stream.closed.wait(5), "stream open after logout")
    return "smoke: the seeds' screens walked end to end"


run(main)
