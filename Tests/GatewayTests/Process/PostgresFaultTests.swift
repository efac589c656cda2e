import Foundation
import Harness
import Support
import TestSupport
import Testing
import Wire

/// PostgreSQL restarts (immediate stop, then start) under the four real executables while likes
/// arrive: every request is answered (success, or 503/504 while the server is away), nothing is
/// lost or repeated, and counts equal their lists. Runs in the PostgreSQL pass of `scripts/test`.
@Suite(.serialized, .enabled(if: TestStorage.engine == .postgres, "runs in the PostgreSQL pass"))
struct PostgresFaultTests {
    @Test func aRestartOfPostgreSQLDuringLikesLosesNothingAndRepeatsNothing() async throws {
        let server = try TestPostgres.start()
        var environment: [String: String] = [:]
        for prefix in ["AUTH", "PROFILE", "NOTIFICATION"] {
            environment["\(prefix)_DATABASE_URL"] = try server.makeDatabase()
        }
        let cluster = try await EndToEndTests.startCluster(environment)
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (owner, _) = try EndToEndTests.register(http, "pf\(tag)o")
        let (likerB, _) = try EndToEndTests.register(http, "pf\(tag)b")
        let (likerC, _) = try EndToEndTests.register(http, "pf\(tag)c")
        let posts = try EndToEndTests.createPosts(http, owner, count: 40)
        let stream = try SSEClient(port: cluster.gatewayPort, token: owner)
        #expect(await stream.waitUntilOpen())

        // 80 likes from four workers; after the 20th answer PostgreSQL stops at once and starts again.
        let likes = posts.flatMap { [($0, likerB), ($0, likerC)] }
        let answered = Locked<[(index: Int, status: Int)]>([])
        let restarted = Locked(false)
        try await EndToEndTests.concurrently(workers: 4, count: likes.count, port: cluster.gatewayPort) { client, i in
            let (post, token) = likes[i]
            let status = try client.request("PUT", "/v1/posts/\(post)/like", token: token).status
            let count = answered.withLock {
                $0.append((i, status))
                return $0.count
            }
            if count == 20 {
                try server.control(["-m", "immediate", "stop"])
                try server.control(["-w", "-t", "60", "start"])
                restarted.set(true)
            }
        }
        #expect(restarted.get())
        let statuses = answered.get()
        #expect(statuses.count == likes.count)
        // Every answer is a success or a fast "try again": never a 500, never a hang.
        #expect(statuses.allSatisfy { [200, 503, 504].contains($0.status) }, "\(statuses.map(\.status))")

        // The refused likes again (idempotent), until each is taken.
        let deadline = Timestamp.nowMs() + 120_000
        for (i, status) in statuses where status != 200 {
            let (post, token) = likes[i]
            var again = 0
            repeat {
                again = try http.request("PUT", "/v1/posts/\(post)/like", token: token).status
                if again != 200 { try await Task.sleep(for: .milliseconds(100)) }
            } while again != 200 && Timestamp.nowMs() < deadline
            #expect(again == 200)
        }

        // Each post counts the two likes its list holds.
        for post in posts {
            let list = try http.request("GET", "/v1/posts/\(post)/likes?limit=10", token: owner)
            #expect(list.status == 200, "\(list.text)")
            #expect((list.object["items"] as? [[String: Any]])?.count == 2, "\(list.text)")
            let read = try http.request("GET", "/v1/posts/\(post)", token: owner)
            #expect(read.object["likeCount"] as? Int == 2, "\(read.text)")
        }
        // One notification per like: none lost, none twice, seqs strictly decreasing down the list.
        var items: [[String: Any]] = []
        while Timestamp.nowMs() < deadline {
            items = []
            var cursor: String?
            repeat {
                let page = try http.request(
                    "GET", "/v1/notifications?limit=50" + (cursor.map { "&cursor=\($0)" } ?? ""), token: owner)
                items += page.object["items"] as? [[String: Any]] ?? []
                cursor = page.object["nextCursor"] as? String
            } while cursor != nil
            if items.count >= likes.count { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let pairs = items.map {
            "\(($0["post"] as? [String: Any])?["id"] ?? "")/\(($0["actor"] as? [String: Any])?["username"] ?? "")"
        }
        #expect(items.count == likes.count && Set(pairs).count == likes.count, "\(items.count) notifications")
        let seqs = items.compactMap { $0["seq"] as? Int }
        #expect(seqs.count == items.count && zip(seqs, seqs.dropFirst()).allSatisfy { $0 > $1 })
        // The open stream saw each of them once.
        #expect(await stream.waitFor(count: likes.count, timeout: 120), "stream has \(stream.events.count)")
        let streamed = stream.events.compactMap(\.id)
        #expect(streamed.count == likes.count && Set(streamed).count == likes.count)
    }
}
