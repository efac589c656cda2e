#!/usr/bin/env python3
"""Generates the gateway's OpenAPI 3.1 document (docs/openapi.json) and the Swift file that
embeds it (Sources/Gateway/OpenAPI/OpenAPIDocument.swift). The source of truth is this file;
scripts/test checks both outputs are current, the document is valid, and every route the
gateway registers (`Gateway --print-routes`) is documented.

Usage: scripts/gen-openapi.py [--check]
"""
import json, os, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def ref(name): return {"$ref": f"#/components/schemas/{name}"}
def s(t, **kw): d = {"type": t}; d.update(kw); return d
def obj(props, required=None, extra=False):
    d = {"type": "object", "properties": props, "additionalProperties": extra}
    if required: d["required"] = required
    return d
def page(item): return obj({"items": s("array", items=item), "nextCursor": {"type": ["string", "null"]}}, ["items", "nextCursor"], True)
STR = s("string"); NSTR = {"type": ["string", "null"]}; BOOL = s("boolean"); INT = s("integer")
TS = s("string", format="date-time", description="RFC 3339 UTC with milliseconds")

schemas = {
    "Problem": obj({
        "type": STR, "title": STR, "status": INT, "detail": STR, "code": s("string", description="stable snake_case code"),
        "errors": s("array", items=obj({"field": STR, "code": STR, "message": STR}, ["field", "code", "message"]))},
        ["type", "title", "status", "code"], True),
    "PublicUser": obj({"id": STR, "username": STR, "name": STR, "bio": STR, "profilePhotoURL": NSTR},
                      ["id", "username", "name", "bio", "profilePhotoURL"], True),
    "Me": obj({"id": STR, "username": STR, "name": STR, "bio": STR, "profilePhotoURL": NSTR, "email": STR, "phone": NSTR,
               "gender": {"type": ["string", "null"], "enum": ["female", "male", "custom", "prefer_not_to_say", None]},
               "birthDate": {"type": ["string", "null"], "format": "date"}, "joinDate": TS},
              ["id", "username", "name", "bio", "email", "joinDate"], True),
    "Counts": obj({"followers": INT, "following": INT, "posts": INT}, ["followers", "following", "posts"], True),
    "FollowState": s("string", enum=["following", "not_following", "self"]),
    "Post": obj({"id": STR, "owner": ref("PublicUser"), "postType": s("string", enum=["photo", "video"]), "mediaURL": STR,
                 "thumbnailURL": STR, "caption": STR, "taggedUsers": s("array", items=ref("PublicUser")), "likeCount": INT,
                 "commentCount": INT, "likedByMe": BOOL, "createdAt": TS},
                ["id", "owner", "postType", "mediaURL", "thumbnailURL", "caption", "taggedUsers", "likeCount", "commentCount",
                 "likedByMe", "createdAt"], True),
    "Comment": obj({"id": STR, "postId": STR, "author": ref("PublicUser"), "text": STR, "createdAt": TS},
                   ["id", "postId", "author", "text", "createdAt"], True),
    "Notification": obj({"id": STR, "seq": INT, "type": s("string", enum=["like", "follow", "comment", "tag", "post"]),
                         "text": STR, "createdAt": TS, "read": BOOL, "actor": ref("PublicUser"),
                         "post": {"oneOf": [obj({"id": STR, "thumbnailURL": STR}, ["id", "thumbnailURL"], True), {"type": "null"}]},
                         "followState": {"oneOf": [ref("FollowState"), {"type": "null"}]}},
                        ["id", "seq", "type", "text", "createdAt", "read", "actor", "post", "followState"], True),
    "UserEntry": obj({"user": ref("PublicUser"), "followState": ref("FollowState")}, ["user", "followState"], True),
    "Session": obj({"user": ref("Me"), "token": STR, "expiresAt": TS}, ["user", "token", "expiresAt"], True),
    "Settings": obj({"sections": s("array", items=obj({"title": STR, "items": s("array", items=obj({
        "id": STR, "title": STR, "action": obj({"type": s("string", enum=["edit_profile", "share", "toggle", "open_url", "logout"]),
                                                "text": STR, "url": STR, "value": BOOL, "confirmTitle": STR, "confirmMessage": STR},
                                               ["type"], True)}, ["id", "title", "action"], True))}, ["title", "items"], True))},
                    ["sections"], True),
    "EditForm": obj({"profilePhotoURL": NSTR, "sections": s("array", items=obj({"title": STR, "fields": s("array", items=obj({
        "key": STR, "label": STR, "placeholder": STR, "value": NSTR}, ["key", "label", "placeholder"], True))}, ["title", "fields"], True))},
                    ["sections"], True),
}

def problem(desc): return {"description": desc, "content": {"application/problem+json": {"schema": ref("Problem")}}}
def ok(schema, code="200", desc="OK"): return {code: {"description": desc, "content": {"application/json": {"schema": schema}}}}
def body(schema, required=True): return {"required": required, "content": {"application/json": {"schema": schema}}}
COMMON = {"400": problem("Bad input: malformed_json, invalid_field, unknown_field or a validation code, with `errors`"),
          "401": problem("Missing, unknown, expired or logged-out token"),
          "413": problem("Body over 1 MiB"), "415": problem("Body not JSON"),
          "429": problem("Too many requests; see Retry-After"),
          "503": problem("A backing service is down (service_unavailable)"),
          "504": problem("A backing service did not answer in time (service_timeout)")}
def op(summary, responses, tag, request=None, params=None, auth=True, extra=None):
    o = {"summary": summary, "tags": [tag], "responses": dict(responses)}
    for k, v in COMMON.items():
        if k == "401" and not auth: continue
        o["responses"].setdefault(k, v)
    for k, v in (extra or {}).items(): o["responses"][k] = v
    if request: o["requestBody"] = request
    if params: o["parameters"] = params
    if not auth: o["security"] = []
    return o

def path_param(name): return {"name": name, "in": "path", "required": True, "schema": STR}
PAGING = [{"name": "limit", "in": "query", "required": False, "schema": s("integer", minimum=1, maximum=100, default=20)},
          {"name": "cursor", "in": "query", "required": False, "schema": STR, "description": "nextCursor from the previous page"}]
NF = {"404": problem("Not found")}
USER = [path_param("username")]; POST = [path_param("id")]

paths = {
    "/v1/auth/register": {"post": op("Create an account", ok(ref("Session"), "201", "Created"), "auth",
        body(obj({"email": s("string", maxLength=254), "username": s("string", pattern="^[a-z0-9._]{3,30}$"),
                  "password": s("string", minLength=8, maxLength=1024), "name": STR, "birthDate": s("string", format="date"),
                  "gender": s("string", enum=["female", "male", "custom", "prefer_not_to_say"])}, ["email", "username", "password"])),
        auth=False, extra={"409": problem("email_taken or username_taken")})},
    "/v1/auth/login": {"post": op("Log in by email or username", ok(ref("Session")), "auth",
        body(obj({"login": STR, "password": STR}, ["login", "password"])), auth=False,
        extra={"401": problem("invalid_credentials (the same for an unknown user and a wrong password)")})},
    "/v1/auth/logout": {"post": op("Log out this session or all sessions; closes their notification streams",
        ok(obj({"loggedOut": BOOL}, ["loggedOut"])), "auth", body(obj({"allSessions": BOOL}), required=False))},
    "/v1/me": {"get": op("The caller", ok(ref("Me")), "profile")},
    "/v1/me/profile/edit": {"get": op("The edit-profile form", ok(ref("EditForm")), "profile")},
    "/v1/me/profile": {"patch": op("Edit the caller's profile", ok(ref("Me")), "profile",
        body(obj({"name": STR, "username": STR, "bio": STR, "profilePhotoURL": NSTR, "email": STR, "phone": NSTR,
                  "gender": {"type": ["string", "null"]}, "birthDate": {"type": ["string", "null"], "format": "date"}})),
        extra={"409": problem("username_taken or email_taken")})},
    "/v1/users/{username}": {"get": op("Profile header: user, counts and the caller's follow state",
        ok(obj({"user": ref("PublicUser"), "counts": ref("Counts"), "followState": ref("FollowState")},
               ["user", "counts", "followState"], True)), "profile", params=USER, extra=NF)},
    "/v1/users/{username}/posts": {"get": op("The user's posts, newest first (grid tab)", ok(page(ref("Post"))), "posts",
        params=USER + PAGING, extra=NF)},
    "/v1/users/{username}/tagged": {"get": op("Posts the user is tagged in, newest first (tagged tab)", ok(page(ref("Post"))),
        "posts", params=USER + PAGING, extra=NF)},
    "/v1/users/{username}/follow": {
        "put": op("Follow (idempotent)", ok(obj({"followState": ref("FollowState"), "notifyPosts": BOOL},
                                                 ["followState", "notifyPosts"], True)), "graph",
                  body(obj({"notifyPosts": BOOL}), required=False), params=USER,
                  extra={**NF, "422": problem("cannot_follow_self")}),
        "delete": op("Unfollow (idempotent)", ok(obj({"followState": ref("FollowState")}, ["followState"], True)), "graph",
                     params=USER, extra={**NF, "422": problem("cannot_follow_self")})},
    "/v1/users/{username}/followers": {"get": op("Followers, newest first", ok(page(ref("UserEntry"))), "graph",
        params=USER + PAGING, extra=NF)},
    "/v1/users/{username}/following": {"get": op("Accounts followed, newest first", ok(page(ref("UserEntry"))), "graph",
        params=USER + PAGING, extra=NF)},
    "/v1/posts": {"post": op("Create a post", ok(ref("Post"), "201", "Created"), "posts",
        body(obj({"postType": s("string", enum=["photo", "video"]), "mediaURL": s("string", format="uri"),
                  "thumbnailURL": s("string", format="uri"), "caption": s("string", maxLength=2200),
                  "taggedUsernames": s("array", items=STR, maxItems=20)}, ["postType", "mediaURL", "thumbnailURL"])))},
    "/v1/posts/{id}": {
        "get": op("A post", ok(ref("Post")), "posts", params=POST, extra=NF),
        "delete": op("Delete a post (owner only)", {"204": {"description": "Deleted"}}, "posts", params=POST,
                     extra={**NF, "403": problem("Not the owner")})},
    "/v1/posts/{id}/like": {
        "put": op("Like (idempotent)", ok(obj({"liked": BOOL, "likeCount": INT}, ["liked", "likeCount"], True)), "posts",
                  params=POST, extra=NF),
        "delete": op("Unlike (idempotent)", ok(obj({"liked": BOOL, "likeCount": INT}, ["liked", "likeCount"], True)), "posts",
                     params=POST, extra=NF)},
    "/v1/posts/{id}/likes": {"get": op("Who liked a post, newest first", ok(page(ref("UserEntry"))), "posts",
        params=POST + PAGING, extra=NF)},
    "/v1/posts/{id}/comments": {
        "get": op("Comments, oldest first", ok(page(ref("Comment"))), "posts", params=POST + PAGING, extra=NF),
        "post": op("Add a comment", ok(ref("Comment"), "201", "Created"), "posts",
                   body(obj({"text": s("string", minLength=1, maxLength=2200)}, ["text"])), params=POST, extra=NF)},
    "/v1/settings": {
        "get": op("The settings screen", ok(ref("Settings")), "settings"),
        "patch": op("Change settings", ok(ref("Settings")), "settings", body(obj({"saveOriginalPosts": BOOL}, ["saveOriginalPosts"])))},
    "/v1/notifications": {"get": op("Notifications, newest first, with the unread count",
        ok({"allOf": [page(ref("Notification")), obj({"unreadCount": INT}, ["unreadCount"], True)]}), "notifications",
        params=PAGING)},
    "/v1/notifications/read": {"post": op("Mark read up to a sequence number", ok(obj({"unreadCount": INT}, ["unreadCount"], True)),
        "notifications", body(obj({"upToSeq": s("integer", minimum=0)}, ["upToSeq"])))},
    "/v1/notifications/stream": {"get": op(
        "Live notifications as Server-Sent Events: `id: <seq>`, `event: notification`, `data: <Notification>`; a comment line "
        "at least every 15 s; resumes after Last-Event-ID or ?since=<seq>; closed on logout or when the client falls too far behind",
        {"200": {"description": "An event stream", "content": {"text/event-stream": {"schema": STR}}}}, "notifications",
        params=[{"name": "since", "in": "query", "required": False, "schema": s("integer", minimum=0)},
                {"name": "Last-Event-ID", "in": "header", "required": False, "schema": STR}])},
    "/healthz": {"get": {"summary": "Liveness", "tags": ["operations"], "security": [],
        "responses": ok(obj({"status": STR}, ["status"], True))}},
    "/readyz": {"get": {"summary": "Readiness: every service answered a ping within 1 s", "tags": ["operations"], "security": [],
        "responses": {**ok(obj({"status": STR, "services": s("object")}, ["status"], True)),
                      "503": {"description": "A service is down", "content": {"application/json": {"schema": obj(
                          {"status": STR, "services": s("object")}, ["status"], True)}}}}}},
    "/metrics": {"get": {"summary": "Prometheus text exposition", "tags": ["operations"], "security": [],
        "responses": {"200": {"description": "Metrics", "content": {"text/plain": {"schema": STR}}}}}},
    "/openapi.json": {"get": {"summary": "This document", "tags": ["operations"], "security": [],
        "responses": {"200": {"description": "OpenAPI 3.1", "content": {"application/json": {"schema": s("object")}}}}}},
}

doc = {
    "openapi": "3.1.0",
    "info": {"title": "Instagram-style backend: Gateway HTTP API", "version": "1.0.0",
             "description": "The public API of the gateway. Errors are RFC 9457 problem details. Lists are cursor-paged: "
                            "?limit=1..100 (default 20)&cursor=...; replies are {items, nextCursor}."},
    "servers": [{"url": "http://127.0.0.1:8080"}],
    "security": [{"bearer": []}],
    "tags": [{"name": t} for t in ["auth", "profile", "posts", "graph", "notifications", "settings", "operations"]],
    "paths": paths,
    "components": {"schemas": schemas, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
}

def main():
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    swift = ("// swift-format-ignore-file\n// Generated by scripts/gen-openapi.py from its document; edit that script, not this file.\n\n"
             "/// The gateway's OpenAPI 3.1 document, served at `/openapi.json`.\n"
             "let openAPIDocumentJSON = #\"\"\"\n" + text + "\"\"\"#\n")
    outputs = {os.path.join(ROOT, "docs/openapi.json"): text,
               os.path.join(ROOT, "Sources/Gateway/OpenAPI/OpenAPIDocument.swift"): swift}
    if "--check" in sys.argv:
        stale = [p for p, t in outputs.items() if not os.path.exists(p) or open(p).read() != t]
        if stale:
            sys.exit("gen-openapi: out of date, run scripts/gen-openapi.py: " + ", ".join(stale))
        print("gen-openapi: docs/openapi.json and OpenAPIDocument.swift are current")
        return
    for p, t in outputs.items():
        os.makedirs(os.path.dirname(p), exist_ok=True)
        open(p, "w").write(t)
    print(f"gen-openapi: wrote {len(paths)} paths")

if __name__ == "__main__":
    main()
