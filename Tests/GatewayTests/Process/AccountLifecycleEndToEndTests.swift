import Foundation
import Harness
import Messages
import Support
import TestSupport
import Testing
import Wire

/// Password change and account deletion (API.md "Account lifecycle and moderation"; issue 40)
/// through the four real executables, on either engine. The deletion is a saga of events (the
/// `Auth` lifecycle messages): AuthService ends the sessions and answers 202, ProfileService and
/// NotificationService hide the account at once and then erase it in batches, each after the
/// other, and AuthService deletes the account, freeing its name, on the last service's event.
/// The test stops each service's erasure between two batches with a hold file (`TestHold`) to
/// kill the process there, and kills AuthService while the last step's event is on its way: the
/// saga finishes anyway, with nothing of the account left.
@Suite(.serialized)
struct AccountLifecycleEndToEndTests {
    struct User {
        var token: String
        var id: String
        var name: String
        var email: String
    }

    let cluster: Cluster
    let http: HTTPClient
    let tag = RandomID.make().prefix(6)
    let holds: String

    init() async throws {
        holds = makeTemporaryDirectory("lifecycle-holds")
        cluster = try await EndToEndTests.startCluster([
            "PROFILE_ERASURE_BATCH": "1", "NOTIFICATION_ERASURE_BATCH": "1", "PROFILE_MEDIA_GC_DELAY_MS": "0",
            "PROFILE_TEST_ERASURE_HOLD_FILE": "\(holds)/profile", "NOTIFICATION_TEST_ERASURE_HOLD_FILE": "\(holds)/notification",
        ])
        http = HTTPClient(port: cluster.gatewayPort)
    }

    static let password = "correct-horse-9"

    func register(_ suffix: String, email: String? = nil) throws -> (HTTPResponse, User) {
        let name = "l\(tag)\(suffix)"
        let email = email ?? "\(name)@example.com"
        let r = try http.request(
            "POST", "/v1/auth/register", json: ["email": email, "username": name, "password": Self.password])
        let user = r.object["user"] as? [String: Any] ?? [:]
        return (r, User(token: r.object["token"] as? String ?? "", id: user["id"] as? String ?? "", name: name, email: email))
    }

    func user(_ suffix: String) throws -> User {
        let (r, user) = try register(suffix)
        #expect(r.status == 201, "\(r.text)")
        return user
    }

    func login(_ user: User, _ password: String = password) throws -> HTTPResponse {
        try http.request("POST", "/v1/auth/login", json: ["login": user.name, "password": password])
    }

    func call(_ method: String, _ path: String, _ user: User, _ json: [String: Any]? = nil) throws -> HTTPResponse {
        try http.request(method, path, token: user.token, json: json ?? (["PUT", "PATCH", "POST"].contains(method) ? [:] : nil))
    }

    func hold(_ service: String, afterBatches n: Int) throws {
        try "\(n)\n".write(toFile: "\(holds)/\(service)", atomically: true, encoding: .utf8)
    }

    func release(_ service: String) { try? FileManager.default.removeItem(atPath: "\(holds)/\(service)") }

    /// Restarts `service` (killed) and waits until the gateway reaches every service again
    /// (`/readyz` 200), so that what follows is not answered 503 by a reconnect in progress.
    func restart(_ service: String) async throws {
        _ = try await cluster.start(service)
        try await eventually("the gateway reaches \(service) again", within: 120) {
            try http.request("GET", "/readyz").status == 200
        }
    }

    /// Waits until `service`'s erasure says it is held (its log's `test.held` line).
    func waitUntilHeld(_ service: String) async throws {
        let log = try #require(cluster.processes[service]?.logPath)
        try await eventually("\(service)'s erasure is held", within: 120) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("test.held")
        }
    }

    @Test func changingThePasswordEndsEveryOtherSessionAndItsStream() async throws {
        defer { cluster.stopAll() }
        let alice = try user("a")
        let other = try #require(try login(alice).object["token"] as? String)
        let stream = try SSEClient(port: cluster.gatewayPort, token: other)
        #expect(await stream.waitUntilOpen())

        let wrong = try call("PUT", "/v1/me/password", alice, ["currentPassword": "nope-nope-1", "newPassword": "new-horse-42"])
        #expect(wrong.status == 403 && wrong.object["code"] as? String == "invalid_credentials", "\(wrong.text)")
        let weak = try call("PUT", "/v1/me/password", alice, ["currentPassword": Self.password, "newPassword": "abc"])
        let fields = (weak.object["errors"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String }
        #expect(weak.status == 400 && fields == ["newPassword"], "\(weak.text)")
        let missing = try call("PUT", "/v1/me/password", alice, ["newPassword": "new-horse-42"])
        #expect(missing.status == 400, "\(missing.text)")
        // Nothing changed yet: the other session still works.
        #expect(try http.request("GET", "/v1/me", token: other).status == 200)

        let changed = try call(
            "PUT", "/v1/me/password", alice, ["currentPassword": Self.password, "newPassword": "new-horse-42"])
        #expect(changed.status == 204, "\(changed.text)")
        #expect(try http.request("GET", "/v1/me", token: other).status == 401)
        #expect(await stream.waitForClose())
        #expect(try call("GET", "/v1/me", alice).status == 200, "the session that changed it stays")
        #expect(try login(alice).status == 401)
        #expect(try login(alice, "new-horse-42").status == 200)
    }

    @Test func deletingHidesAtOnceThenErasesEverythingAcrossCrashesAndFreesTheName() async throws {
        defer { cluster.stopAll() }
        let (alice, bob, carol) = (try user("a"), try user("b"), try user("c"))
        let second = try #require(try login(alice).object["token"] as? String)
        // Alice's post from an upload, liked by bob and commented on by carol; follows both ways;
        // alice's like and comment on bob's post, which notify bob.
        let upload = try MediaEndToEndTests.upload(http, alice.token, try MediaFiles.jpeg(width: 320, height: 240), "image/jpeg")
        let media = try #require(upload.object["id"] as? String)
        let created = try call("POST", "/v1/posts", alice, ["postType": "photo", "mediaId": media, "caption": "alice's secret"])
        let alicePost = try #require(created.object["id"] as? String)
        let bobPost = try EndToEndTests.createPosts(http, bob.token, count: 1)[0]
        for (who, path) in [
            (bob, "/v1/users/\(alice.name)/follow"), (carol, "/v1/users/\(alice.name)/follow"),
            (alice, "/v1/users/\(bob.name)/follow"), (bob, "/v1/posts/\(alicePost)/like"), (alice, "/v1/posts/\(bobPost)/like"),
        ] {
            #expect(try call("PUT", path, who).status == 200, "\(path)")
        }
        #expect(try call("POST", "/v1/posts/\(alicePost)/comments", carol, ["text": "lovely"]).status == 201)
        #expect(try call("POST", "/v1/posts/\(bobPost)/comments", alice, ["text": "from alice"]).status == 201)
        try await eventually("bob is notified of alice's follow, like and comment") {
            try GroupedNotificationTests.flat(http, bob.token).count == 3
        }
        try await eventually("alice is notified of bob's and carol's follows, bob's like, carol's comment") {
            try GroupedNotificationTests.flat(http, alice.token).count == 4
        }
        let mediaDirectory = "\(cluster.dataDirectory)/media"
        #expect(Self.files(under: mediaDirectory, naming: media) > 0)
        let stream = try SSEClient(port: cluster.gatewayPort, token: alice.token)
        #expect(await stream.waitUntilOpen())

        // The password is checked; the body must have it.
        let wrong = try call("DELETE", "/v1/me", alice, ["password": "nope-nope-1"])
        #expect(wrong.status == 403 && wrong.object["code"] as? String == "invalid_credentials", "\(wrong.text)")
        #expect(try call("DELETE", "/v1/me", alice, [:]).status == 400)
        #expect(try call("GET", "/v1/users/\(alice.name)", bob).status == 200)

        try hold("profile", afterBatches: 1)
        try hold("notification", afterBatches: 1)
        let deleted = try call("DELETE", "/v1/me", alice, ["password": Self.password])
        #expect(deleted.status == 202 && deleted.object["status"] as? String == "deleting", "\(deleted.text)")
        // At once: every session and stream ends, login is 401, everything of alice is 404,
        // her name and email stay taken.
        #expect(await stream.waitForClose())
        #expect(try call("GET", "/v1/me", alice).status == 401)
        #expect(try http.request("GET", "/v1/me", token: second).status == 401)
        #expect(try login(alice).status == 401)
        #expect(try call("GET", "/v1/users/\(alice.name)", bob).status == 404)
        #expect(try call("GET", "/v1/posts/\(alicePost)", bob).status == 404)
        #expect(try http.request("GET", "/media/\(media)/1080").status == 404)
        #expect(try call("GET", "/v1/posts/\(alicePost)/comments", carol).status == 404)
        #expect(try register("a").0.status == 409)

        // ProfileService is killed between two batches of its erasure, and restarted.
        try await waitUntilHeld("profile")
        #expect(try register("a", email: "fresh-\(tag)@example.com").0.status == 409, "not done: the name is kept")
        cluster.kill("profile")
        release("profile")
        try await restart("profile")
        // NotificationService is killed between two batches of its own, then AuthService goes
        // down before the last event reaches it; both come back.
        try await waitUntilHeld("notification")
        #expect(try register("a", email: "fresh-\(tag)@example.com").0.status == 409, "not done: the name is kept")
        cluster.kill("notification")
        cluster.kill("auth")
        release("notification")
        _ = try await cluster.start("notification")
        try await restart("auth")

        // Done: the name is free again (a new account, with another email here, so that the old
        // one can be looked for below).
        let reborn = try await eventuallyValue("the name is free once the erasure is done", within: 120) {
            () -> User? in
            let (r, user) = try register("a", email: "fresh-\(tag)@example.com")
            return r.status == 201 ? user : nil
        }
        #expect(reborn.id != alice.id)
        // Others' counts, lists, notifications, groups and badges no longer know her.
        try await eventually("bob's and carol's counts and notifications are corrected") {
            let bobHeader = try call("GET", "/v1/users/\(bob.name)", carol).object["counts"] as? [String: Any] ?? [:]
            let carolHeader = try call("GET", "/v1/users/\(carol.name)", bob).object["counts"] as? [String: Any] ?? [:]
            let bobsNotifications = try GroupedNotificationTests.flat(http, bob.token)
            return bobHeader["followers"] as? Int == 0 && bobHeader["following"] as? Int == 0
                && carolHeader["following"] as? Int == 0 && bobsNotifications.isEmpty
        }
        let post = try call("GET", "/v1/posts/\(bobPost)", bob).object
        #expect(post["likeCount"] as? Int == 0 && post["commentCount"] as? Int == 0, "\(post)")
        #expect((try call("GET", "/v1/posts/\(bobPost)/comments", bob).object["items"] as? [Any])?.isEmpty == true)
        #expect((try call("GET", "/v1/notifications/groups", bob).object["items"] as? [Any])?.isEmpty == true)
        #expect(try call("GET", "/v1/notifications/unread-count", bob).object["unreadCount"] as? Int == 0)
        #expect((try call("GET", "/v1/users/\(bob.name)/followers", bob).object["items"] as? [Any])?.isEmpty == true)
        #expect(try call("GET", "/v1/posts/\(alicePost)", bob).status == 404)
        // Her files are gone from disk.
        #expect(Self.files(under: mediaDirectory, naming: media) == 0)
        // No database of any service holds her email or caption; her id is left only where the
        // design keeps an opaque tombstone (see `allowedTombstones`).
        if TestStorage.engine == .sqlite {
            let found = try Self.scan(cluster.dataDirectory, for: [alice.id, alice.email, "alice's secret", "from alice"])
            #expect(found[alice.email] == nil && found["alice's secret"] == nil && found["from alice"] == nil, "\(found)")
            let places = Set(found[alice.id] ?? [])
            #expect(places.isSubset(of: Self.allowedTombstones), "\(places.subtracting(Self.allowedTombstones))")
        }
    }

    /// Where an erased account's id (a random string, nothing else) may stay: the lifecycle's own
    /// events in each outbox (ids and times), and the state rows that make a late event about
    /// the account change nothing.
    static let allowedTombstones: Set<String> = [
        "auth:outbox", "profile:outbox", "notification:outbox", "profile:account_states", "notification:account_states",
    ]

    /// How many files under `directory` have `name` in their path.
    static func files(under directory: String, naming name: String) -> Int {
        let paths = FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []
        return paths.filter { $0.contains(name) }.count
    }

    /// Every SQLite database under `directory`, read through Python's sqlite3: for each needle,
    /// the `database:table` places any column of any row contains it.
    static func scan(_ directory: String, for needles: [String]) throws -> [String: [String]] {
        let script = """
            import glob, json, os, sqlite3, sys
            needles = json.loads(sys.argv[2]); found = {}
            for path in glob.glob(os.path.join(sys.argv[1], "*.sqlite")):
                db = sqlite3.connect("file:" + path + "?mode=ro", uri=True)
                name = os.path.basename(path).split(".")[0].replace("Service", "").lower()
                for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
                    cols = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]
                    for row in db.execute(f'SELECT * FROM "{table}"'):
                        text = " ".join(str(v) for v in row)
                        for n in needles:
                            if n in text: found.setdefault(n, []).append(name + ":" + table)
            print(json.dumps(found))
            """
        let out = try MediaFiles.run(
            "python3", ["-c", script, directory, String(decoding: try WireJSON.encode(needles), as: UTF8.self)],
            package: "python3")
        let object = try JSONSerialization.jsonObject(with: out) as? [String: [String]] ?? [:]
        return object.mapValues { Array(Set($0)).sorted() }
    }
}
