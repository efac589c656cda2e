/// The moderation console (API.md "Account lifecycle and moderation", "The console"): a page the
/// gateway serves at `GET /moderation` with its own script (`/moderation/console.js`) and style
/// (`/moderation/console.css`), no third-party code. It signs in through `POST /v1/auth/login`,
/// keeps the token in a variable of its script only (never in storage or a cookie), lists the open
/// reports (`GET /v1/moderation/reports`) with each target's snapshot, the reason, the reporter's
/// comment and the count of reports on the target, and resolves them (dismiss, remove, suspend:
/// `POST /v1/moderation/reports/{id}/resolve`). Every text a user wrote is put in the page with
/// `textContent`, never parsed as markup; a media URL is shown as text, never followed.
///
/// Served with `Content-Security-Policy: default-src 'self'` (and no framing, no `<base>`, forms
/// only to itself), so no inline or outside script, style, image or connection runs even if markup
/// got in; `X-Content-Type-Options: nosniff`; `Referrer-Policy: no-referrer`; `Cache-Control:
/// no-cache` (a new build's page is fetched again).
struct ModerationConsole: Controller {
    /// The policy every console response carries (W3C Content Security Policy Level 3).
    static let contentSecurityPolicy =
        "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    func register(_ routes: inout RouteCollection) {
        routes.add(.get, "/moderation", authenticated: false) { _ in
            Self.response("text/html; charset=utf-8", Self.html)
        }
        routes.add(.get, "/moderation/console.js", authenticated: false) { _ in
            Self.response("text/javascript; charset=utf-8", Self.script)
        }
        routes.add(.get, "/moderation/console.css", authenticated: false) { _ in
            Self.response("text/css; charset=utf-8", Self.style)
        }
    }

    static func response(_ contentType: String, _ body: String) -> HTTPResponse {
        HTTPResponse(
            status: 200,
            headers: [
                ("Content-Type", contentType), ("Content-Security-Policy", contentSecurityPolicy),
                ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY"),
                ("Cache-Control", "no-cache"),
            ], body: Array(body.utf8))
    }
}
