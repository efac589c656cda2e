#!/usr/bin/python3
"""The moderation console in a real browser (API.md "Account lifecycle and moderation", "The console").

Drives headless Chromium through its DevTools protocol (over a small WebSocket client of its own,
the standard library only) against a running gateway:

  1. opens GET /moderation and checks it is served with `Content-Security-Policy: default-src 'self'`;
  2. signs in through the page's own form (POST /v1/auth/login, the token kept in the page's memory),
     after which the form is out of view and the queue in it;
  3. waits for the open reports, finds the report on --post and checks that its snapshot's caption
     (e.g. `<img src=x onerror=alert(1)>`) and the reporter's comment are shown as text: the exact
     characters are in the page, no element was made of them, and no dialog ever opened;
  4. saves a screenshot (--screenshot) showing it;
  5. resolves the report with --action through the page's button and waits for the page to say so.

Prints one JSON line: {"ok": true, "screenshot": ..., "reportId": ..., "shownCaption": ...}. Exit
status 0 when every check held, 1 with the failing check on stderr, 2 for a usage error, 3 when no
Chromium is installed (skipped: {"skipped": "..."} on stdout and a message on stderr).
GatewayTests' ModerationEndToEndTests runs it (scripts/test, so .ci/run); by hand:

  /usr/bin/python3 scripts/console-browser-test.py --url http://127.0.0.1:8080 --login mod \
      --password 'correct-horse-9' --post POST_ID --caption '<img src=x onerror=alert(1)>' \
      --screenshot /tmp/console.png
"""

import argparse
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

SKIPPED = 3


class Failure(Exception):
    pass


class Skipped(Exception):
    pass


class WebSocket:
    """The client half of RFC 6455, enough for DevTools: text frames out (masked), text frames in
    (fragmented or not), pings answered, a close ends it."""

    def __init__(self, url, timeout):
        parts = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        path = parts.path + ("?" + parts.query if parts.query else "")
        self.sock.sendall(
            ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
             % (path, parts.hostname, parts.port or 80, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise Failure("DevTools closed the WebSocket handshake")
            head += chunk
        if not head.startswith(b"HTTP/1.1 101"):
            raise Failure("DevTools refused the WebSocket: %r" % head.split(b"\r\n")[0])

    def _exactly(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise Failure("DevTools closed the WebSocket")
            data += chunk
        return data

    def _frame(self, opcode, payload):
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send(self, text):
        self._frame(0x1, text.encode())

    def recv(self):
        message = b""
        while True:
            first, second = self._exactly(2)
            opcode, n = first & 0x0F, second & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exactly(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exactly(8))[0]
            mask = self._exactly(4) if second & 0x80 else None
            payload = self._exactly(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x9:
                self._frame(0xA, payload)
                continue
            if opcode == 0x8:
                raise Failure("DevTools closed the WebSocket")
            if opcode in (0x0, 0x1, 0x2):
                message += payload
                if first & 0x80:
                    return message.decode()

    def close(self):
        try:
            self._frame(0x8, b"")
        finally:
            self.sock.close()


def find_chromium():
    for name in (os.environ.get("CHROMIUM") or "", "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise Skipped("no chromium on PATH (set CHROMIUM, or install Debian's chromium: scripts/install-deps)")


class Browser:
    """One headless Chromium with a DevTools connection to its first page."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="console-browser-")
        self.process = subprocess.Popen(
            [
                find_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-sync", "--disable-dev-shm-usage", "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0", "--remote-allow-origins=*", "--window-size=1280,1000",
                "--user-data-dir=" + self.profile, "about:blank",
            ],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port = self._devtools_port()
        page = self._until(lambda: next((t for t in self._targets(port) if t.get("type") == "page"), None),
                           "a page target")
        self.ws = WebSocket(page["webSocketDebuggerUrl"], timeout)
        self.next_id = 0
        self.events = []
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Network.enable")

    def _until(self, probe, what):
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            value = probe()
            if value:
                return value
            if self.process.poll() is not None:
                raise Failure("chromium exited (status %s) while waiting for %s" % (self.process.returncode, what))
            time.sleep(0.05)
        raise Failure("timed out waiting for " + what)

    def _devtools_port(self):
        path = os.path.join(self.profile, "DevToolsActivePort")

        def probe():
            try:
                with open(path) as f:
                    first = f.readline().strip()
                return int(first) if first else None
            except (OSError, ValueError):
                return None

        return self._until(probe, "DevToolsActivePort")

    @staticmethod
    def _targets(port):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=2) as r:
                return json.load(r)
        except OSError:
            return []

    def send(self, method, **params):
        """Sends a command and returns its result, keeping the events that arrive meanwhile."""
        self.next_id += 1
        ident = self.next_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise Failure("%s: %s" % (method, message["error"]))
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)
                if message["method"] == "Page.javascriptDialogOpening":
                    # A script ran that should never have: let the page go on, and fail later.
                    self.ws.send(json.dumps({"id": 0, "method": "Page.handleJavaScriptDialog",
                                             "params": {"accept": True}}))

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise Failure("page script failed: %s" % result["exceptionDetails"].get("text"))
        return result.get("result", {}).get("value")

    def wait_for(self, expression, what):
        return self._until(lambda: self.evaluate(expression), what)

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        try:
            os.killpg(self.process.pid, 15)
        except OSError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def js(value):
    return json.dumps(value)


def run(args):
    find_chromium()
    base = args.url.rstrip("/")
    with urllib.request.urlopen(base + "/moderation", timeout=args.timeout) as r:
        policy = r.headers.get("Content-Security-Policy") or ""
    if not policy.startswith("default-src 'self'"):
        raise Failure("GET /moderation: Content-Security-Policy is %r" % policy)
    browser = Browser(args.timeout)
    try:
        browser.send("Page.navigate", url=base + "/moderation")
        browser.wait_for("document.readyState === 'complete' && !!document.getElementById('sign-in')", "the page")
        # Sign in through the page's own form.
        browser.evaluate(
            "document.getElementById('login').value = %s; document.getElementById('password').value = %s;"
            " document.getElementById('sign-in-button').click(); true" % (js(args.login), js(args.password)))
        # Signed in: the form is gone from view (its `hidden` wins over the style's display).
        browser.wait_for("getComputedStyle(document.getElementById('sign-in')).display === 'none'"
                         " && getComputedStyle(document.getElementById('queue')).display !== 'none'",
                         "the sign-in form to give way to the queue")
        item = ("[...document.querySelectorAll('li.report')]"
                ".find(li => [...li.querySelectorAll('dd')].some(dd => dd.textContent === %s))" % js(args.post))
        browser.wait_for("!document.getElementById('queue').hidden && !!(%s)" % item, "the report on the post")
        report_id = browser.evaluate("(%s).dataset.id" % item)
        shown = browser.evaluate(
            "[...(%s).querySelectorAll('dd')].map(dd => dd.textContent).find(t => t === %s) || null"
            % (item, js(args.caption)))
        if shown != args.caption:
            raise Failure("the caption is not shown as its text: %r" % shown)
        if args.comment is not None:
            quoted = browser.evaluate("((%s).querySelector('blockquote.comment') || {}).textContent" % item)
            if quoted != args.comment:
                raise Failure("the reporter's comment is not shown as its text: %r" % quoted)
        # Nothing the users wrote became markup: no image, no script but the console's own, no dialog.
        counts = browser.evaluate(
            "({images: document.querySelectorAll('img').length,"
            " scripts: [...document.scripts].map(s => s.getAttribute('src')),"
            " token: JSON.stringify(Object.assign({}, localStorage, sessionStorage)) + document.cookie})")
        if counts["images"] != 0 or counts["scripts"] != ["/moderation/console.js"]:
            raise Failure("user text became markup: %r" % counts)
        if counts["token"] not in ("{}", ""):
            raise Failure("the console stored something in the browser: %r" % counts["token"])
        os.makedirs(os.path.dirname(os.path.abspath(args.screenshot)), exist_ok=True)
        shot = browser.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(args.screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        # Resolve it through the page's button.
        clicked = browser.evaluate(
            "(() => { const b = (%s).querySelector('button[data-action=%s]'); if (!b) return false; b.click();"
            " return true; })()" % (item, js(args.action)))
        if not clicked:
            raise Failure("no %s button on the report" % args.action)
        browser.wait_for(
            "document.getElementById('status').textContent.startsWith('Resolved: ') &&"
            " ![...document.querySelectorAll('li.report')].some(li => li.dataset.id === %s)" % js(report_id),
            "the page to show the report resolved")
        status = browser.evaluate("document.getElementById('status').textContent")
        if args.after_screenshot:
            shot = browser.send("Page.captureScreenshot", format="png")
            with open(args.after_screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        dialogs = [e for e in browser.events if e["method"] == "Page.javascriptDialogOpening"]
        if dialogs:
            raise Failure("a dialog opened: %r" % dialogs[0]["params"].get("message"))
        violations = [e for e in browser.events if e["method"] == "Runtime.exceptionThrown"]
        if violations:
            raise Failure("the console threw: %r" % violations[0]["params"]["exceptionDetails"].get("text"))
        return {"ok": True, "screenshot": os.path.abspath(args.screenshot), "reportId": report_id,
                "shownCaption": shown, "status": status}
    finally:
        browser.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="the gateway's base URL")
    parser.add_argument("--login", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--post", required=True, help="the reported post's id")
    parser.add_argument("--caption", required=True, help="the caption the snapshot must show as text")
    parser.add_argument("--comment", help="the reporter's comment, shown as text")
    parser.add_argument("--action", default="remove_content", choices=["dismiss", "remove_content", "suspend_user"])
    parser.add_argument("--screenshot", required=True, help="where to write the PNG")
    parser.add_argument("--after-screenshot", help="a second PNG, after resolving")
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    try:
        print(json.dumps(run(args)), flush=True)
    except Skipped as skipped:
        print(json.dumps({"skipped": str(skipped)}), flush=True)
        print("console-browser-test: skipped: " + str(skipped), file=sys.stderr, flush=True)
        sys.exit(SKIPPED)
    except Failure as failure:
        print("console-browser-test: " + str(failure), file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
