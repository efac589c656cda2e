import Foundation

/// The gateway's public HTTP API (docs/API.md) as the load test uses it, over `CurlEngine`:
/// requests on `engine`, notification streams on `streams`. Two engines, two connection caches:
/// libcurl looks for a reusable connection among every connection of its multi handle to the
/// host, so with 10,000 streams in the same one each request scanned 10,000 connections, and
/// the load test, not the system, capped a likes run near 1,000 requests a second.
struct GatewayAPI: Sendable {
    let engine: CurlEngine
    let streams: CurlEngine
    /// `http://host:port` without a trailing slash.
    let baseURL: String

    func request(
        _ method: String, _ path: String, token: String? = nil, json: Any? = nil, at: UInt64? = nil
    ) -> HTTPRequest {
        let body = json.map { Array((try? JSONSerialization.data(withJSONObject: $0)) ?? Data()) }
        return HTTPRequest(
            method: method, url: baseURL + path, token: token, body: body, notBeforeNs: at)
    }

    func call(_ method: String, _ path: String, token: String? = nil, json: Any? = nil) async
        -> HTTPResult
    {
        await engine.send(request(method, path, token: token, json: json))
    }

    /// `POST /v1/auth/register`, falling back to login when the username is taken (a resumed setup).
    /// - Returns: the user's id and token, or the failing result.
    func registerOrLogin(username: String, password: String) async -> Result<
        (id: String, token: String), LoadTestError
    > {
        let email = "\(username)@loadtest.example"
        var r = await call(
            "POST", "/v1/auth/register",
            json: ["email": email, "username": username, "password": password, "name": username])
        if r.status == 409 {
            r = await call("POST", "/v1/auth/login", json: ["login": username, "password": password])
        }
        guard r.status == 200 || r.status == 201 else {
            return .failure(
                LoadTestError(
                    "register \(username): HTTP \(r.status) \(r.error ?? String(decoding: r.body.prefix(200), as: UTF8.self))"
                ))
        }
        let o = r.object
        guard let token = o["token"] as? String,
            let id = (o["user"] as? [String: Any])?["id"] as? String
        else {
            return .failure(LoadTestError("register \(username): reply without user.id/token"))
        }
        return .success((id, token))
    }

    /// `POST /v1/auth/login`. - Returns: the session token, or the failing result.
    func login(username: String, password: String) async -> Result<String, LoadTestError> {
        let r = await call("POST", "/v1/auth/login", json: ["login": username, "password": password])
        guard r.status == 200, let token = r.object["token"] as? String else {
            return .failure(
                LoadTestError(
                    "login \(username): HTTP \(r.status) \(r.error ?? String(decoding: r.body.prefix(200), as: UTF8.self))"
                ))
        }
        return .success(token)
    }

    /// `POST /v1/posts` with a photo. - Returns: the post id, or nil with the result.
    func createPost(token: String, caption: String) async -> (String?, HTTPResult) {
        let r = await call(
            "POST", "/v1/posts", token: token,
            json: [
                "postType": "photo", "mediaURL": "https://media.example/loadtest/\(caption).jpg",
                "thumbnailURL": "https://media.example/loadtest/\(caption)-t.jpg", "caption": caption,
            ])
        return (r.object["id"] as? String, r)
    }
}

/// A load-test failure with a message for the terminal.
struct LoadTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One notification as the load test matches it: type, post id, actor id.
struct NotificationKey: Hashable, Sendable {
    var type: String
    var postId: String
    var actorId: String

    /// Reads `type`, `post.id` and `actor.id` from a Notification JSON object.
    init?(json: [String: Any]) {
        guard let type = json["type"] as? String,
            let actor = (json["actor"] as? [String: Any])?["id"] as? String
        else { return nil }
        self.type = type
        self.actorId = actor
        self.postId = (json["post"] as? [String: Any])?["id"] as? String ?? ""
    }

    init(type: String, postId: String, actorId: String) {
        self.type = type
        self.postId = postId
        self.actorId = actorId
    }
}

/// Runs `body(i)` for i in 0..<count with at most `limit` running at once.
func forEachConcurrently(_ count: Int, limit: Int, _ body: @escaping @Sendable (Int) async -> Void)
    async
{
    await withTaskGroup(of: Void.self) { group in
        var next = 0
        while next < min(limit, count) {
            let i = next
            group.addTask { await body(i) }
            next += 1
        }
        while await group.next() != nil {
            if next < count {
                let i = next
                group.addTask { await body(i) }
                next += 1
            }
        }
    }
}
