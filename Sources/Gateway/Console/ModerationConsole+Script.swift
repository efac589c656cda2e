extension ModerationConsole {
    /// `GET /moderation/console.js`: the console's behaviour. The bearer token lives in the
    /// closure's `token` only (gone when the page is closed or reloaded); every text from the
    /// API reaches the page through `textContent` (`el`, `field`), never `innerHTML`.
    static let script = #"""
        "use strict";
        (() => {
          // The session: in this closure only, never written to the browser's storage or a cookie.
          let token = null;
          let nextCursor = null;

          const $ = (id) => document.getElementById(id);

          /// An element with a class and a text, set as text: never parsed as markup.
          function el(tag, className, text) {
            const element = document.createElement(tag);
            if (className) element.className = className;
            if (text !== undefined && text !== null) element.textContent = String(text);
            return element;
          }

          function say(text, isError) {
            const status = $("status");
            status.textContent = text;
            status.className = isError ? "error" : "";
          }

          /// Calls the API; answers the JSON body, or throws an Error with the problem's status,
          /// code and detail.
          async function api(method, path, body) {
            const headers = { "Accept": "application/json" };
            if (token) headers["Authorization"] = "Bearer " + token;
            if (body !== undefined) headers["Content-Type"] = "application/json";
            const response = await fetch(path, {
              method, headers, body: body === undefined ? undefined : JSON.stringify(body),
              cache: "no-store", credentials: "omit", redirect: "error",
            });
            const text = await response.text();
            let data = null;
            if (text) {
              try { data = JSON.parse(text); } catch (ignored) { data = null; }
            }
            if (!response.ok) {
              const error = new Error((data && (data.detail || data.title)) || ("HTTP " + response.status));
              error.status = response.status;
              error.code = data && data.code;
              throw error;
            }
            return data;
          }

          function showSignedIn(username) {
            $("sign-in").hidden = true;
            $("queue").hidden = false;
            $("sign-out").hidden = false;
            $("who").textContent = "Signed in as " + username;
          }

          function showSignedOut() {
            token = null;
            nextCursor = null;
            $("reports").replaceChildren();
            $("queue").hidden = true;
            $("sign-out").hidden = true;
            $("sign-in").hidden = false;
            $("who").textContent = "";
          }

          async function signIn(event) {
            event.preventDefault();
            const login = $("login").value;
            const password = $("password").value;
            $("password").value = "";
            $("sign-in-button").disabled = true;
            try {
              const session = await api("POST", "/v1/auth/login", { login, password });
              token = session.token;
              try {
                await load(true);
              } catch (error) {
                if (error.status === 403) {
                  await signOut();
                  say("This account is not a moderator.", true);
                  return;
                }
                throw error;
              }
              showSignedIn(session.user.username);
            } catch (error) {
              token = null;
              say("Sign-in failed: " + error.message, true);
            } finally {
              $("sign-in-button").disabled = false;
            }
          }

          async function signOut() {
            if (token) {
              try { await api("POST", "/v1/auth/logout", {}); } catch (ignored) { /* the session ends anyway */ }
            }
            showSignedOut();
            say("Signed out.");
          }

          /// Reads the open reports, the first page (`reset`) or the next.
          async function load(reset) {
            const params = new URLSearchParams({ status: "open", limit: "50" });
            if (!reset && nextCursor) params.set("cursor", nextCursor);
            const page = await api("GET", "/v1/moderation/reports?" + params.toString());
            const list = $("reports");
            if (reset) list.replaceChildren();
            for (const report of page.items) list.append(renderReport(report));
            nextCursor = page.nextCursor;
            $("more").hidden = !nextCursor;
            $("empty").hidden = list.children.length > 0;
            say(list.children.length + (list.children.length === 1 ? " open report." : " open reports."));
          }

          /// A term and its value in a snapshot, when it has one.
          function field(list, term, value) {
            if (value === null || value === undefined || value === "") return;
            list.append(el("dt", null, term), el("dd", "value", value));
          }

          function renderReport(report) {
            const item = el("li", "report");
            item.dataset.id = report.id;
            item.dataset.targetType = report.target.type;
            const head = el("div", "report-head");
            const count = report.reportsOnTarget;
            head.append(
              el("span", "type", report.target.type),
              el("span", "reason", report.reason.replace("_", " ")),
              el("span", "count", count + (count === 1 ? " report" : " reports") + " on this " + report.target.type),
              el("time", "created", report.createdAt));
            item.append(head);

            const s = report.target.snapshot;
            const snapshot = el("dl", "snapshot");
            field(snapshot, report.target.type === "user" ? "Account" : "By", "@" + s.username);
            field(snapshot, "Name", s.name);
            field(snapshot, "Bio", s.bio);
            field(snapshot, "Profile photo", s.profilePhotoURL);
            field(snapshot, "Caption", s.caption);
            field(snapshot, "Media", s.mediaURL);
            field(snapshot, "Thumbnail", s.thumbnailURL);
            field(snapshot, "Comment", s.text);
            field(snapshot, report.target.type === "post" ? "Post" : "On post", s.postId);
            item.append(snapshot);

            if (report.comment) {
              item.append(el("p", "comment-label", "The reporter wrote:"), el("blockquote", "comment", report.comment));
            }
            item.append(el("p", "reporter",
              "Reported by " + (report.reporter ? "@" + report.reporter.username : "a deleted account")));

            const actions = el("div", "actions");
            const note = el("input", "note");
            note.placeholder = "Note for the log (optional)";
            note.maxLength = 1000;
            actions.append(note);
            const choices = [["dismiss", "Dismiss"]];
            if (report.target.type !== "user") choices.push(["remove_content", "Remove " + report.target.type]);
            choices.push(["suspend_user", "Suspend @" + s.username]);
            const buttons = choices.map(([action, label]) => {
              const button = el("button", "action", label);
              button.type = "button";
              button.dataset.action = action;
              button.addEventListener("click", () => resolve(report, action, note, buttons));
              return button;
            });
            actions.append(...buttons);
            item.append(actions);
            return item;
          }

          async function resolve(report, action, note, buttons) {
            for (const button of buttons) button.disabled = true;
            const body = note.value.trim() ? { action, note: note.value.trim() } : { action };
            try {
              const resolved = await api(
                "POST", "/v1/moderation/reports/" + encodeURIComponent(report.id) + "/resolve", body);
              const done = resolved.resolution ? resolved.resolution.action : action;
              await load(true);
              say("Resolved: " + done + (done === action ? "" : " (another moderator resolved it first)") + ".");
            } catch (error) {
              for (const button of buttons) button.disabled = false;
              if (error.status === 401) {
                showSignedOut();
                say("The session ended: sign in again.", true);
              } else {
                say("Could not resolve: " + error.message, true);
              }
            }
          }

          document.addEventListener("DOMContentLoaded", () => {
            $("sign-in").addEventListener("submit", signIn);
            $("sign-out").addEventListener("click", signOut);
            $("refresh").addEventListener("click", () => load(true).catch((error) => say(error.message, true)));
            $("more").addEventListener("click", () => load(false).catch((error) => say(error.message, true)));
          });
        })();
        """#
}
