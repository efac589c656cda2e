#!/usr/bin/python3
"""A stand-in for Apple's APNs provider API, for tests: HTTP/2 over TLS on 127.0.0.1.

It checks each request as APNs would ("Sending notification requests to APNs", "Establishing a
token-based connection to APNs", "Handling notification responses from APNs", developer.apple.com)
and answers with Apple's status and reason; it records every push it accepts and counts the
connections opened. A test steers it through a plain HTTP/1.1 control port.

Usage:
  apns-standin.py --cert server.pem --key server-key.pem --public-key apns-public.pem \
                  --topic com.example.app --team-id TEAM123456 --key-id KEY1234567

Prints `READY <apns-port> <control-port>` on stdout once both listen (127.0.0.1, ephemeral
ports), and exits when its stdin reaches end of file (the test process is gone) or on SIGTERM.

Checks, in Apple's order of reasons (the first failing one answers):
  method POST (405 MethodNotAllowed); path /3/device/<token> (404 BadPath), the token hex
  (400 BadDeviceToken); authorization `bearer <JWT>` (403 MissingProviderToken), the JWT's
  header {alg: ES256, kid: --key-id}, claims {iss: --team-id, iat: integer} and ES256 signature
  by --public-key (403 InvalidProviderToken), iat not older than one hour (403
  ExpiredProviderToken); apns-topic (400 MissingTopic, or BadTopic when not --topic);
  apns-push-type alert (400 InvalidPushType); apns-priority 5 or 10 (400 BadPriority);
  apns-expiration an integer (400 BadExpirationDate); apns-collapse-id at most 64 bytes (400
  BadCollapseId); a header twice (400 DuplicateHeaders); the payload present (400 PayloadEmpty),
  at most 4096 bytes (413 PayloadTooLarge), a JSON object with an `aps` object (400 BadPayload:
  the stand-in's own reason, Apple documents none for it).

Control port (JSON in and out):
  POST /rules   {"status": 410, "reason": "Unregistered", "timestamp": 1700000000000,
                 "retryAfter": 3, "token": "<hex>", "count": 1}   or   {"drop": true, ...}
                A rule answers a request that passed the checks instead of 200: `status` with
                `reason` (and `timestamp`, `retryAfter` when given), or `drop` closes the
                connection without answering. `token` limits it to one device token; `count` is
                how many requests it answers (default 1 without `token`, unlimited with one).
                Rules are tried in the order they were added. Returns {"rules": <number>}.
  GET /pushes   the accepted pushes, oldest first: [{"token", "headers", "payload", "time",
                "connection"}]; `?atLeast=N&timeout=S` waits up to S seconds (default 30) until
                there are N; `since=K` leaves out the first K (to page through a long run).
  GET /requests every request that passed the checks or failed them, with "status" and "reason".
  GET /stats    {"connections": opened, "open": still open, "requests", "accepted", "tokens":
                distinct provider tokens seen, "cpuSeconds": the stand-in's own CPU time so far}
  POST /reset   forgets rules, pushes, requests and counts (open connections stay open).
"""

import argparse
import base64
import http.server
import itertools
import json
import logging
import os
import re
import signal
import socket
import ssl
import sys
import threading
import time
import uuid

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

MAX_PAYLOAD = 4096
MAX_STREAMS = 100
APNS_IDS = itertools.count(1)
MAX_COLLAPSE_ID = 64
TOKEN_MAX_AGE = 3600
PATH = re.compile(r"^/3/device/([^/?]*)$")
HEX = re.compile(r"^[0-9a-fA-F]+$")
# apns-id when the request has none: a UUID-shaped id, this run's random prefix and a counter.
RUN_ID = str(uuid.uuid4()).upper()[:18]


class Rejected(Exception):
    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status
        self.reason = reason


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class State:
    """Everything the control port reads and changes, under one lock."""

    def __init__(self):
        self.lock = threading.Condition()
        self.reset()

    def reset(self):
        self.rules = []
        self.pushes = []
        self.requests = []
        self.connections = 0
        self.tokens = set()

    def take_rule(self, token):
        """The first rule for `token` with answers left (its count is used up by one)."""
        for rule in self.rules:
            if rule.get("token") not in (None, token):
                continue
            count = rule.get("count")
            if count is not None:
                if count <= 0:
                    continue
                rule["count"] = count - 1
            return dict(rule)
        return None


class Checker:
    def __init__(self, public_key, topic, team_id, key_id):
        self.public_key = public_key
        self.topic = topic
        self.team_id = team_id
        self.key_id = key_id
        self.verified = {}  # JWT -> iat, for tokens whose signature checked out

    def provider_token(self, value):
        if value is None:
            raise Rejected(403, "MissingProviderToken")
        parts = value.split(" ", 1)
        if len(parts) != 2 or parts[0].lower() != "bearer":
            raise Rejected(403, "InvalidProviderToken")
        jwt = parts[1].strip()
        iat = self.verified.get(jwt)
        if iat is None:
            iat = self.verify(jwt)
            self.verified[jwt] = iat
        if time.time() - iat > TOKEN_MAX_AGE:
            raise Rejected(403, "ExpiredProviderToken")
        return jwt

    def verify(self, jwt):
        try:
            header_part, claims_part, signature_part = jwt.split(".")
            header = json.loads(b64url_decode(header_part))
            claims = json.loads(b64url_decode(claims_part))
            signature = b64url_decode(signature_part)
        except ValueError:
            raise Rejected(403, "InvalidProviderToken")
        if any(p.endswith("=") for p in (header_part, claims_part, signature_part)):
            raise Rejected(403, "InvalidProviderToken")  # JWS: base64url without padding
        if header.get("alg") != "ES256" or header.get("kid") != self.key_id:
            raise Rejected(403, "InvalidProviderToken")
        iat = claims.get("iat")
        if claims.get("iss") != self.team_id or not isinstance(iat, int) or isinstance(iat, bool):
            raise Rejected(403, "InvalidProviderToken")
        if len(signature) != 64:
            raise Rejected(403, "InvalidProviderToken")
        r = int.from_bytes(signature[:32], "big")
        s = int.from_bytes(signature[32:], "big")
        try:
            self.public_key.verify(
                encode_dss_signature(r, s), (header_part + "." + claims_part).encode(), ec.ECDSA(hashes.SHA256())
            )
        except InvalidSignature:
            raise Rejected(403, "InvalidProviderToken")
        return iat

    def check(self, headers, body):
        """Raises Rejected with Apple's status and reason; returns (token, jwt, payload text)."""
        names = [name for name, _ in headers]
        if len(names) != len(set(names)):
            raise Rejected(400, "DuplicateHeaders")
        h = dict(headers)
        if h.get(":method") != "POST":
            raise Rejected(405, "MethodNotAllowed")
        match = PATH.match(h.get(":path", ""))
        if not match:
            raise Rejected(404, "BadPath")
        token = match.group(1)
        if not token:
            raise Rejected(400, "MissingDeviceToken")
        if not HEX.match(token) or len(token) % 2:
            raise Rejected(400, "BadDeviceToken")
        jwt = self.provider_token(h.get("authorization"))
        topic = h.get("apns-topic")
        if topic is None:
            raise Rejected(400, "MissingTopic")
        if topic != self.topic:
            raise Rejected(400, "BadTopic")
        if h.get("apns-push-type") != "alert":
            raise Rejected(400, "InvalidPushType")
        if h.get("apns-priority") not in ("5", "10"):
            raise Rejected(400, "BadPriority")
        if not re.match(r"^-?[0-9]+$", h.get("apns-expiration", "")):
            raise Rejected(400, "BadExpirationDate")
        collapse = h.get("apns-collapse-id")
        if collapse is not None and len(collapse.encode()) > MAX_COLLAPSE_ID:
            raise Rejected(400, "BadCollapseId")
        if not body:
            raise Rejected(400, "PayloadEmpty")
        if len(body) > MAX_PAYLOAD:
            raise Rejected(413, "PayloadTooLarge")
        try:
            payload = json.loads(body.decode("utf-8"))
        except ValueError:
            raise Rejected(400, "BadPayload")
        if not isinstance(payload, dict) or not isinstance(payload.get("aps"), dict):
            raise Rejected(400, "BadPayload")
        return token, jwt, body.decode("utf-8")


class Connection:
    """One client connection: TLS with ALPN h2, an h2 state machine, answered inline."""

    def __init__(self, server, sock, number):
        self.server = server
        self.sock = sock
        self.number = number
        # h2's own header validation is left out: it costs more than everything else per request,
        # and the checks below cover what APNs answers with a reason.
        self.conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(
                client_side=False,
                header_encoding="utf-8",
                validate_inbound_headers=False,
                validate_outbound_headers=False,
                normalize_outbound_headers=False,
            )
        )
        self.streams = {}  # stream id -> (headers, bytearray body)

    def run(self):
        state = self.server.state
        try:
            self.conn.initiate_connection()
            # h2 counts open streams by walking them all for each new one: 100 keeps that cheap.
            self.conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_STREAMS})
            self.sock.sendall(self.conn.data_to_send())
            while True:
                data = self.read()
                if not data:
                    return
                for event in self.conn.receive_data(data):
                    if not self.handle(event):
                        return
                out = self.conn.data_to_send()
                if out:
                    self.sock.sendall(out)
        except (OSError, h2.exceptions.ProtocolError, ssl.SSLError):
            return
        finally:
            with state.lock:
                self.server.open -= 1
            try:
                self.sock.close()
            except OSError:
                pass

    def read(self):
        """What has arrived: blocks for the first bytes, then takes every TLS record already
        there, so that a burst of streams is answered with one write."""
        data = self.sock.recv(65536)
        if not data:
            return data
        chunks = [data]
        size = len(data)
        self.sock.setblocking(False)
        try:
            while size < 1 << 20:
                more = self.sock.recv(65536)
                if not more:
                    break
                chunks.append(more)
                size += len(more)
        except (ssl.SSLWantReadError, BlockingIOError):
            pass
        finally:
            self.sock.setblocking(True)
        return b"".join(chunks)

    def handle(self, event):
        """False when the connection is to be dropped."""
        if isinstance(event, h2.events.RequestReceived):
            self.streams[event.stream_id] = (event.headers, bytearray())
        elif isinstance(event, h2.events.DataReceived):
            stream = self.streams.get(event.stream_id)
            if stream is not None and len(stream[1]) <= MAX_PAYLOAD:
                stream[1].extend(event.data)
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            stream = self.streams.pop(event.stream_id, None)
            if stream is not None:
                return self.answer(event.stream_id, stream[0], bytes(stream[1]))
        elif isinstance(event, h2.events.StreamReset):
            self.streams.pop(event.stream_id, None)
        elif isinstance(event, h2.events.ConnectionTerminated):
            return False
        return True

    def answer(self, stream_id, headers, body):
        state = self.server.state
        h = dict(headers)
        record = {
            "path": h.get(":path"),
            "headers": {k: v for k, v in headers if not k.startswith(":")},
            "time": time.time(),
            "connection": self.number,
        }
        try:
            token, jwt, payload = self.server.checker.check(headers, body)
        except Rejected as rejected:
            with state.lock:
                state.requests.append(dict(record, status=rejected.status, reason=rejected.reason))
                state.lock.notify_all()
            self.respond(stream_id, rejected.status, {"reason": rejected.reason}, h.get("apns-id"))
            return True
        with state.lock:
            state.tokens.add(jwt)
            rule = state.take_rule(token)
            record.update(token=token, payload=payload)
            if rule is not None and rule.get("drop"):
                state.requests.append(dict(record, status=0, reason="dropped"))
                state.lock.notify_all()
            elif rule is not None:
                state.requests.append(dict(record, status=rule["status"], reason=rule.get("reason")))
                state.lock.notify_all()
            else:
                state.requests.append(dict(record, status=200, reason=None))
                state.pushes.append(record)
                state.lock.notify_all()
        if rule is not None and rule.get("drop"):
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return False
        if rule is not None:
            body = {"reason": rule.get("reason") or "InternalServerError"}
            if rule.get("timestamp") is not None:
                body["timestamp"] = rule["timestamp"]
            self.respond(stream_id, rule["status"], body, h.get("apns-id"), rule.get("retryAfter"))
        else:
            self.respond(stream_id, 200, None, h.get("apns-id"))
        return True

    def respond(self, stream_id, status, body, apns_id, retry_after=None):
        if apns_id is None:
            n = next(APNS_IDS)
            apns_id = f"{RUN_ID}-{n >> 48:04X}-{n & 0xFFFFFFFFFFFF:012X}"
        headers = [(":status", str(status)), ("apns-id", apns_id)]
        if retry_after is not None:
            headers.append(("retry-after", str(retry_after)))
        if body is None:
            self.conn.send_headers(stream_id, headers, end_stream=True)
            return
        data = json.dumps(body).encode()
        headers += [("content-type", "application/json"), ("content-length", str(len(data)))]
        self.conn.send_headers(stream_id, headers)
        self.conn.send_data(stream_id, data, end_stream=True)


class APNsServer:
    def __init__(self, args):
        with open(args.public_key, "rb") as f:
            public_key = serialization.load_pem_public_key(f.read())
        self.checker = Checker(public_key, args.topic, args.team_id, args.key_id)
        self.state = State()
        self.open = 0
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.minimum_version = ssl.TLSVersion.TLSv1_2
        self.tls.load_cert_chain(args.cert, args.key)
        self.tls.set_alpn_protocols(["h2"])
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]

    def serve(self):
        while True:
            sock, _ = self.listener.accept()
            threading.Thread(target=self.handshake, args=(sock,), daemon=True).start()

    def handshake(self, raw):
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            raw.settimeout(10)
            sock = self.tls.wrap_socket(raw, server_side=True)
            sock.settimeout(None)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        if sock.selected_alpn_protocol() != "h2":
            sock.close()  # APNs speaks HTTP/2 only
            return
        with self.state.lock:
            self.state.connections += 1
            self.open += 1
            number = self.state.connections
        Connection(self, sock, number).run()


class Control(http.server.BaseHTTPRequestHandler):
    server_version = "apns-standin"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def do_GET(self):
        apns = self.server.apns
        state = apns.state
        path, _, query = self.path.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        if path == "/pushes":
            at_least = int(params.get("atLeast", "0"))
            since = int(params.get("since", "0"))
            deadline = time.monotonic() + float(params.get("timeout", "30"))
            with state.lock:
                while len(state.pushes) < at_least and time.monotonic() < deadline:
                    state.lock.wait(deadline - time.monotonic())
                value = state.pushes[since:]
            self.reply(200, value)
        elif path == "/requests":
            with state.lock:
                value = list(state.requests)
            self.reply(200, value)
        elif path == "/stats":
            with state.lock:
                value = {
                    "connections": state.connections,
                    "open": apns.open,
                    "requests": len(state.requests),
                    "accepted": len(state.pushes),
                    "tokens": len(state.tokens),
                    "cpuSeconds": time.process_time(),
                }
            self.reply(200, value)
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self):
        state = self.server.apns.state
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        if self.path == "/rules":
            try:
                rule = json.loads(body or b"{}")
                if not isinstance(rule, dict) or not (rule.get("drop") or isinstance(rule.get("status"), int)):
                    raise ValueError("a rule needs an integer status or drop: true")
            except ValueError as error:
                self.reply(400, {"error": str(error)})
                return
            if "count" not in rule and "token" not in rule:
                rule["count"] = 1
            with state.lock:
                state.rules.append(rule)
                count = len(state.rules)
            self.reply(200, {"rules": count})
        elif self.path == "/reset":
            with state.lock:
                state.reset()
            self.reply(200, {})
        else:
            self.reply(404, {"error": "not found"})


def main():
    parser = argparse.ArgumentParser(description="A stand-in APNs for tests (HTTP/2 over TLS).")
    parser.add_argument("--cert", required=True, help="server certificate chain, PEM")
    parser.add_argument("--key", required=True, help="server private key, PEM")
    parser.add_argument("--public-key", required=True, help="the provider key's public key, PEM")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--team-id", required=True)
    parser.add_argument("--key-id", required=True)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # hpack logs every header at debug level

    apns = APNsServer(args)
    control = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Control)
    control.daemon_threads = True
    control.apns = apns
    threading.Thread(target=apns.serve, daemon=True).start()
    threading.Thread(target=control.serve_forever, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print(f"READY {apns.port} {control.server_address[1]}", flush=True)
    # The test process holds our stdin: end of file means it is gone.
    while sys.stdin.buffer.read(4096):
        pass
    os._exit(0)


if __name__ == "__main__":
    main()
