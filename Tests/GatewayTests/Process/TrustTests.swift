import CZMQ
import Foundation
import Harness
import Messages
import ServiceKit
import Storage
import Support
import TestSupport
import Testing
import Transport
import Wire

/// No local process can act as a user (issue 37, point 1), through the real executables in
/// their default configuration (nothing about CURVE set): a ZeroMQ client without the stack's
/// keys gets no session on any service socket (its handshake fails, so nothing it sends is
/// ever read), one with a key of its own that the stack never made is refused by ZAP, each is
/// logged once by the service however often it reconnects, and a client with a key among the
/// stack's gets answers. On PostgreSQL, the test server refuses a connection without the
/// password.
@Suite(.serialized)
struct TrustTests {
    /// A raw client socket of `type` connected to `endpoint` with `configure` applied, and what
    /// its monitor saw: handshake failures and successes.
    final class RawClient: @unchecked Sendable {
        // @unchecked: the sockets are used only by the test's task, one call at a time.
        let socket: ZMQSocket
        let monitor: ZMQSocket
        private(set) var failures = 0
        private(set) var successes = 0

        init(_ context: ZMQContext, _ type: ZMQSocketType, _ endpoint: String, configure: (ZMQSocket) throws -> Void) throws {
            socket = try ZMQSocket(context, type)
            try configure(socket)
            let monitorEndpoint = "inproc://trust-\(RandomID.make())"
            try socket.monitor(
                monitorEndpoint,
                events: ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                    | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_DISCONNECTED)
            monitor = try ZMQSocket(context, .pair)
            try monitor.connect(monitorEndpoint)
            try socket.setReconnect(intervalMs: 50, maxMs: 100)
            try socket.connect(endpoint)
            if type == .sub { try socket.subscribe("") }
        }

        /// Reads the monitor's events so far.
        func drain() throws {
            while let event = try monitor.receive(dontWait: true) {
                guard let first = event.first, first.count >= 2 else { continue }
                let code = Int32(first[0]) | (Int32(first[1]) << 8)
                if code == ZMQ_EVENT_HANDSHAKE_SUCCEEDED { successes += 1 } else { failures += 1 }
            }
        }

        func close() {
            socket.close()
            monitor.close()
        }
    }

    /// The server-side sockets of the stack: (process, endpoint, client socket type).
    static func serverSockets(_ cluster: Cluster) -> [(process: String, endpoint: String, type: ZMQSocketType)] {
        var sockets: [(String, String, ZMQSocketType)] = []
        for service in ["auth", "profile", "notification"] {
            let fields = cluster.endpoints[service] ?? [:]
            sockets.append((service, fields["rpc"] ?? "", .dealer))
            sockets.append((service, fields["events"] ?? "", .sub))
            if let delivery = fields["delivery"] { sockets.append((service, delivery, .sub)) }
        }
        return sockets
    }

    /// Lines of `process`'s log containing `message`.
    static func logLines(_ cluster: Cluster, _ process: String, _ message: String) throws -> [String] {
        let path = try #require(cluster.processes[process]).logPath
        return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
            .filter { $0.contains("\"\(message)\"") }
    }

    @Test func clientsWithoutTheStacksKeysGetNothingAndAreLoggedOnce() async throws {
        let cluster = Cluster(dataDirectory: makeTemporaryDirectory("trust"))
        defer { cluster.stopAll() }
        try await cluster.start(["auth", "profile", "notification"])
        let context = ZMQContext()
        defer { context.shutdown() }
        let sockets = Self.serverSockets(cluster)
        #expect(sockets.count == 7)

        // Plain ZMTP (no keys at all), two clients at each socket: every handshake fails; the
        // ping they queued is never read.
        let ping = RequestEnvelope(
            id: RandomID.make(), type: Ops.Ping.type, deadline: Timestamp.nowMs() + 60_000, trace: RandomID.make(),
            body: Empty())
        for (process, endpoint, type) in sockets {
            for _ in 0..<2 {
                let raw = try RawClient(context, type, endpoint) { _ in }
                defer { raw.close() }
                if type == .dealer { _ = try raw.socket.send([try WireJSON.encode(ping)], dontWait: true) }
                try await eventually("a failed handshake of a plain client at \(process) \(endpoint) (\(type))") {
                    try raw.drain()
                    return raw.failures >= 1
                }
                #expect(raw.successes == 0)
                #expect(try raw.socket.receive(dontWait: true) == nil)
            }
        }
        // A CURVE client with a key pair the stack never made: refused by ZAP.
        let (foreignPublic, foreignSecret) = try CurveSecurity.generateKeyPair()
        let serverKeys = try CurveSecurity.publicKeys(in: "\(cluster.dataDirectory)/curve/public")
        for (process, endpoint, type) in sockets {
            for _ in 0..<2 {
                let raw = try RawClient(context, type, endpoint) { socket in
                    try socket.set(ZMQ_CURVE_SERVERKEY, bytes: Array(serverKeys[process, default: ""].utf8) + [0])
                    try socket.set(ZMQ_CURVE_PUBLICKEY, bytes: Array(foreignPublic.utf8) + [0])
                    try socket.set(ZMQ_CURVE_SECRETKEY, bytes: Array(foreignSecret.utf8) + [0])
                }
                defer { raw.close() }
                try await eventually("a refused handshake of a foreign key at \(process) \(endpoint) (\(type))") {
                    try raw.drain()
                    return raw.failures >= 1
                }
                #expect(raw.successes == 0)
            }
        }
        // Logged once: a failed handshake once per server socket, a refused key once per client
        // address (the ZAP handler serves the whole process), however many attempts.
        for process in ["auth", "profile", "notification"] {
            let handshakes = try Self.logLines(cluster, process, "curve.handshake_failed")
            let refusals = try Self.logLines(cluster, process, "curve.client_refused")
            #expect(handshakes.count == sockets.filter { $0.process == process }.count, "\(process): \(handshakes)")
            #expect(refusals.count == 1, "\(process): \(refusals)")
        }
        // With a key among the stack's: answers.
        for service in ["auth", "profile", "notification"] {
            let client = try cluster.client(service, context: context)
            defer { client.shutdown() }
            try await waitUntilReachable(client)
        }
    }

    /// Cursors are opaque and authenticated (point 6): a page's `nextCursor` shows nothing of
    /// what it holds, and one changed, forged (the groups' snapshot head set to 0, which made a
    /// page redo every group lookup) or taken from another list is 400 `invalid_cursor`.
    @Test func cursorsAreOpaqueAndTamperProof() async throws {
        let cluster = try await EndToEndTests.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (owner, ownerUser) = try EndToEndTests.register(http, "tc\(tag)o")
        let ownerName = try #require(ownerUser["username"] as? String)
        // Three groups: the follows of today, and a like on each of two posts.
        let posts = try EndToEndTests.createPosts(http, owner, count: 2)
        for i in 0..<3 {
            let fan = try EndToEndTests.register(http, "tc\(tag)f\(i)").0
            #expect(try http.request("PUT", "/v1/users/\(ownerName)/follow", token: fan, json: [:]).status == 200)
            if i < 2 { #expect(try http.request("PUT", "/v1/posts/\(posts[i])/like", token: fan).status == 200) }
        }
        let groups = try await eventuallyValue("5 notifications") {
            let page = try http.request("GET", "/v1/notifications?limit=1", token: owner)
            return (page.object["unreadCount"] as? Int ?? 0) >= 5 ? page : nil
        }
        let cursors = [
            try #require(groups.object["nextCursor"] as? String),
            try #require(
                http.request("GET", "/v1/notifications/groups?limit=1", token: owner).object["nextCursor"] as? String),
            try #require(
                http.request("GET", "/v1/users/\(ownerName)/followers?limit=1", token: owner).object["nextCursor"] as? String),
        ]
        for cursor in cursors {
            // Opaque: the list's name and its counters are not in the token in any readable form.
            var base64 = String(cursor.dropFirst(3)).replacingOccurrences(of: "-", with: "+")
                .replacingOccurrences(of: "_", with: "/")
            while base64.utf8.count % 4 != 0 { base64 += "=" }
            let bytes = [UInt8](Data(base64Encoded: base64) ?? Data())
            #expect(bytes.count > 40, "\(cursor)")
            for word in ["notifications", "groups", "followers"] {
                #expect(!String(decoding: bytes, as: UTF8.self).contains(word), "\(cursor)")
            }
        }
        func code(_ path: String) throws -> (Int, String?) {
            let r = try http.request("GET", path, token: owner)
            return (r.status, r.object["code"] as? String)
        }
        // Changed, truncated, or moved to another list: refused.
        var changed = Array(cursors[1])
        changed[changed.count / 2] = changed[changed.count / 2] == "A" ? "B" : "A"
        let forgedHead = "c1." + Data("notifications.groups\n\(ownerUser["id"] ?? "")\n999\n0".utf8).base64EncodedString()
        for bad in [String(changed), String(cursors[1].dropLast(3)), forgedHead] {
            let (status, errorCode) = try code("/v1/notifications/groups?limit=1&cursor=\(bad)")
            #expect(status == 400 && errorCode == "invalid_cursor", "\(bad)")
        }
        let (status, errorCode) = try code("/v1/notifications/groups?limit=1&cursor=\(cursors[0])")
        #expect(status == 400 && errorCode == "invalid_cursor")
        // The genuine one still pages.
        #expect(try code("/v1/notifications/groups?limit=1&cursor=\(cursors[1])").0 == 200)
    }

    /// A logout is a logout on every gateway and for the devices (points 3 and 4): after a logout
    /// through gateway 1, gateway 2 refuses the token once AuthService's event reached it (the
    /// window from the logout's answer to that refusal is measured and printed, over 20
    /// logouts); a device registered with the session after NotificationService applied the
    /// logout is refused (401) even when its request was authenticated before (as a gateway
    /// inside that window would send it), and one registered just before is removed.
    @Test func aLogoutEndsTheSessionOnEveryGatewayAndNoDeviceOutlivesIt() async throws {
        let cluster = try await EndToEndTests.startCluster()
        defer { cluster.stopAll() }
        let second = try await cluster.start("gateway.2")
        let (one, two) = (HTTPClient(port: cluster.gatewayPort), HTTPClient(port: Int(second["port"] ?? "0") ?? 0))
        let context = ZMQContext()
        defer { context.shutdown() }
        let auth = try cluster.client("auth", context: context)
        let notification = try cluster.client("notification", context: context)
        defer {
            auth.shutdown()
            notification.shutdown()
        }
        let tag = RandomID.make().prefix(6)
        let (token, user) = try EndToEndTests.register(one, "tl\(tag)u")
        let userId = try #require(user["id"] as? String)
        let session = try await auth.call(Auth.Validate.self, .init(token: token)).sessionId
        let device = ["platform": "ios", "environment": "sandbox", "installationId": UUID().uuidString]
        func register(_ http: HTTPClient, _ token: String, _ n: Int) throws -> Int {
            try http.request(
                "POST", "/v1/devices", token: token,
                json: device.merging(["token": String(repeating: "cd", count: 31) + String(format: "%02x", n)]) { $1 }
            ).status
        }
        #expect(try register(two, token, 1) == 201)
        #expect(try two.request("GET", "/v1/me", token: token).status == 200)  // cached on gateway 2 now

        #expect(try one.request("POST", "/v1/auth/logout", token: token, json: [:]).status == 200)
        try await eventually("gateway 2 refuses the logged-out token") {
            try two.request("GET", "/v1/me", token: token).status == 401
        }
        // NotificationService applied the logout (its cursor at AuthService's head): the device is
        // gone, and a registration with the session is refused however it was authenticated.
        let head = try await auth.call(Ops.Replay.self, .init(after: 0, limit: 0)).head
        try await eventually("NotificationService applied AuthService's events through \(head)") {
            try await notification.call(Ops.Ping.self, Empty()).counters["subscriber.auth.cursor", default: 0] >= head
        }
        let late = await #expect(throws: ServiceError.self) {
            _ = try await notification.call(
                Notifications.RegisterDevice.self,
                .init(
                    userId: userId, sessionId: session, token: String(repeating: "cd", count: 32), environment: "sandbox",
                    installationId: device["installationId"]?.lowercased()))
        }
        #expect(late?.status == 401)
        let fresh = try Self.login(one, "tl\(tag)u")
        #expect((try one.request("GET", "/v1/devices", token: fresh).object["items"] as? [Any])?.isEmpty == true)

        // The window, measured: 20 logouts through gateway 1, each token cached on gateway 2
        // before; the time from the logout's answer until gateway 2 answers 401.
        var windows: [Double] = []
        var accepted = 0
        for _ in 0..<20 {
            let t = try Self.login(one, "tl\(tag)u")
            #expect(try two.request("GET", "/v1/me", token: t).status == 200)
            #expect(try one.request("POST", "/v1/auth/logout", token: t, json: [:]).status == 200)
            let answered = DispatchTime.now().uptimeNanoseconds
            try await eventually("gateway 2 refuses the logged-out token", intervalMs: 0) {
                if try two.request("GET", "/v1/me", token: t).status == 401 { return true }
                accepted += 1
                return false
            }
            windows.append(Double(DispatchTime.now().uptimeNanoseconds - answered) / 1e6)
        }
        let sorted = windows.sorted()
        print(
            String(
                format: "logout window on the other gateway (20 logouts): %d requests accepted after the answer; "
                    + "first 401 after p50 %.1f ms, max %.1f ms", accepted, sorted[sorted.count / 2], sorted.last ?? 0))
    }

    /// Logs `username` in (the tests' password) through `http`. - Returns: the token.
    static func login(_ http: HTTPClient, _ username: String) throws -> String {
        let r = try http.request("POST", "/v1/auth/login", json: ["login": username, "password": "correct-horse-9"])
        #expect(r.status == 200, "\(r.text)")
        return r.object["token"] as? String ?? ""
    }

    @Test(.enabled(if: TestStorage.engine == .postgres, "the PostgreSQL test server"))
    func thePostgreSQLServerRefusesAConnectionWithoutThePassword() throws {
        let server = try TestPostgres.shared()
        let name = try server.makeDatabase().split(separator: "/").last.map { String($0.prefix { $0 != "?" }) } ?? ""
        #expect(throws: DatabaseError.self) { _ = try PostgresConnection(url: server.urlWithoutPassword(database: name)) }
        _ = try PostgresConnection(url: server.url(database: name))
    }
}
