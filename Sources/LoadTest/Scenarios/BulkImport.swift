import Foundation
import Messages
import Support
import Wire

/// Setup through the services instead of the public HTTP API: users by `auth.import_users`
/// (one argon2id hash, computed here, for all of them), follows by `notification.import_follows`
/// (no follow notifications), over ZeroMQ (`ServiceLink`). Both are idempotent, so an
/// interrupted setup sends its unsaved batches again and gets the same ids back.
enum BulkImport {
    /// A phase's name and duration in seconds, for the summary line.
    typealias Phase = (name: String, seconds: Double)

    /// Imports users `population.users.count ..< n` (`<prefix>_<i>`, email
    /// `<prefix>_<i>@loadtest.example`, as an HTTP registration names them), `options.importBatch`
    /// per request and `options.importConcurrency` requests in flight, appending them in order;
    /// saves the population every 30 s (and the caller at the end).
    /// - Returns: the phases (hash, users).
    /// - Throws: `LoadTestError` when a batch fails after its retries.
    static func users(
        _ link: ServiceLink, _ population: inout Population, count n: Int, options: Options, path: String
    ) async throws -> [Phase] {
        let t0 = Clock.nowNs()
        let hash = try PasswordHash.make(Setup.password)
        let hashed = Clock.nowNs()
        let start = population.users.count
        let prefix = population.prefix
        let size = max(1, min(options.importBatch, Auth.ImportUsers.maxUsers))
        let batches = stride(from: start, to: n, by: size).map { $0..<min(n, $0 + size) }
        let imported = Locked((users: 0, created: 0))
        let progress = Progress {
            let (done, created) = imported.withLock { ($0.users, $0.created) }
            let s = Clock.ms(from: hashed, to: Clock.nowNs()) / 1000
            return String(
                format: "setup: imported %d/%d users (%d new, %.0f/s)", start + done, n, created,
                Double(done) / max(s, 0.001))
        }
        defer { progress.stop() }
        var finished: [Int: [LoadUser]] = [:]
        var appended = 0
        var lastSave = Clock.nowNs()
        try await withThrowingTaskGroup(of: (Int, [LoadUser]).self) { group in
            var launched = 0
            func launch() {
                let (k, range) = (launched, batches[launched])
                group.addTask {
                    let users = range.map { i in
                        Auth.ImportUsers.User(username: "\(prefix)_\(i)", email: "\(prefix)_\(i)@loadtest.example")
                    }
                    let reply = try await retrying("import users \(range.lowerBound)..<\(range.upperBound)") {
                        try await link.auth.call(
                            Auth.ImportUsers.self, .init(passwordHash: hash, users: users), timeoutMs: 120_000)
                    }
                    guard reply.users.count == users.count else {
                        throw LoadTestError("import users: \(reply.users.count) answers for \(users.count) users")
                    }
                    imported.withLock {
                        $0.users += users.count
                        $0.created += reply.users.count { $0.created }
                    }
                    return (k, zip(users, reply.users).map { LoadUser(username: $0.username, id: $1.id, token: "") })
                }
                launched += 1
            }
            while launched < min(max(1, options.importConcurrency), batches.count) { launch() }
            while let (k, users) = try await group.next() {
                finished[k] = users
                // Appended in order, so a saved population is always a prefix of users.
                while let next = finished.removeValue(forKey: appended) {
                    population.users += next
                    appended += 1
                }
                if launched < batches.count { launch() }
                if Clock.nowNs() - lastSave > 30_000_000_000 {
                    try Setup.save(population, path)
                    lastSave = Clock.nowNs()
                }
            }
        }
        let done = Clock.nowNs()
        let created = imported.withLock { $0.created }
        log(
            String(
                format: "setup: %d users imported (%d new) in %.1f s, %d per request, %d in flight", n - start, created,
                Clock.ms(from: hashed, to: done) / 1000, size, options.importConcurrency))
        return [
            ("password hash", Clock.ms(from: t0, to: hashed) / 1000), ("import users", Clock.ms(from: hashed, to: done) / 1000),
        ]
    }

    /// Makes each group's followers follow its followee (`notification.import_follows`, at most
    /// `Notifications.ImportFollows.maxFollowers` per request, `options.importConcurrency` in flight).
    /// - Parameter edges: followee index → follower indices (population indices).
    /// - Returns: edges created (the others existed).
    /// - Throws: `LoadTestError` when a request fails after its retries.
    @discardableResult
    static func follows(
        _ link: ServiceLink, _ population: Population, edges: [(followee: Int, followers: [Int])], notifyPosts: Bool,
        options: Options, label: String
    ) async throws -> Int {
        let users = population.users
        var requests: [(followee: String, followers: [String])] = []
        for (followee, followers) in edges {
            var rest = followers[...]
            while !rest.isEmpty {
                let chunk = rest.prefix(Notifications.ImportFollows.maxFollowers)
                requests.append((users[followee].id, chunk.map { users[$0].id }))
                rest = rest.dropFirst(chunk.count)
            }
        }
        let total = requests.reduce(0) { $0 + $1.followers.count }
        let t0 = Clock.nowNs()
        let counts = Locked((sent: 0, created: 0))
        let progress = Progress {
            let (sent, created) = counts.withLock { ($0.sent, $0.created) }
            return "setup: \(label) \(sent)/\(total) (\(created) new)"
        }
        defer { progress.stop() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            func launch() {
                let request = requests[next]
                group.addTask {
                    let reply = try await retrying("import follows of \(request.followee)") {
                        try await link.notification.call(
                            Notifications.ImportFollows.self,
                            .init(followeeId: request.followee, followerIds: request.followers, notifyPosts: notifyPosts),
                            timeoutMs: 120_000)
                    }
                    counts.withLock {
                        $0.sent += request.followers.count
                        $0.created += reply.created
                    }
                }
                next += 1
            }
            while next < min(max(1, options.importConcurrency), requests.count) { launch() }
            while try await group.next() != nil {
                if next < requests.count { launch() }
            }
        }
        let created = counts.withLock { $0.created }
        log(
            String(
                format: "setup: %@: %d follows imported (%d new) in %.1f s, %d requests", label, total, created,
                Clock.ms(from: t0, to: Clock.nowNs()) / 1000, requests.count))
        return created
    }

    /// Starts a session for each of `indices` (`auth.import_sessions`, `options.importBatch` ids
    /// per request, at most `Auth.ImportSessions.maxUsers`, `options.importConcurrency` in
    /// flight): no argon2id verification per user, so 10,000 sessions take about a second where
    /// logins take minutes. AuthService must allow it (`ALLOW_IMPORTS=1`).
    /// - Returns: the tokens by population index.
    /// - Throws: the `ServiceError` 403 `forbidden` when AuthService does not allow it (so the
    ///   caller can log in instead), `LoadTestError` when a batch fails otherwise.
    static func sessions(_ link: ServiceLink, _ population: Population, _ indices: [Int], options: Options)
        async throws -> [Int: String]
    {
        let size = max(1, min(options.importBatch, Auth.ImportSessions.maxUsers))
        let batches = stride(from: 0, to: indices.count, by: size).map { Array(indices[$0..<min(indices.count, $0 + size)]) }
        let users = population.users
        var tokens: [Int: String] = [:]
        tokens.reserveCapacity(indices.count)
        try await withThrowingTaskGroup(of: [(Int, String)].self) { group in
            var next = 0
            func launch() {
                let batch = batches[next]
                group.addTask {
                    // Not idempotent: a batch retried after a timeout whose first attempt went
                    // through leaves that attempt's sessions unused until they expire (harmless).
                    let reply = try await retrying("import sessions for \(batch.count) users", passing: [403]) {
                        try await link.auth.call(
                            Auth.ImportSessions.self, .init(userIds: batch.map { users[$0].id }), timeoutMs: 120_000)
                    }
                    guard reply.sessions.count == batch.count,
                        zip(batch, reply.sessions).allSatisfy({ users[$0].id == $1.identity.id })
                    else { throw LoadTestError("import sessions: \(reply.sessions.count) answers for \(batch.count) users") }
                    return zip(batch, reply.sessions).map { ($0, $1.session.token) }
                }
                next += 1
            }
            while next < min(max(1, options.importConcurrency), batches.count) { launch() }
            while let got = try await group.next() {
                for (i, token) in got { tokens[i] = token }
                if next < batches.count { launch() }
            }
        }
        return tokens
    }

    /// Waits until ProfileService's and NotificationService's identity replicas have applied
    /// every AuthService event there is now (their `subscriber.auth.cursor` counters reach
    /// AuthService's outbox head), so the population is in every service, not only in
    /// AuthService. - Returns: seconds waited.
    /// - Throws: `LoadTestError` after `timeoutSeconds`.
    static func waitForReplicas(_ link: ServiceLink, timeoutSeconds: Double = 1_200) async throws -> Double {
        let t0 = Clock.nowNs()
        let head = try await link.auth.call(Ops.Replay.self, .init(after: 0, limit: 0), timeoutMs: 10_000).head
        let cursors = Locked([String: Int64]())
        let progress = Progress {
            let c = cursors.withLock { $0 }
            return "setup: replicas at auth event "
                + c.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                .joined(separator: ", ") + " of \(head)"
        }
        defer { progress.stop() }
        let end = t0 + UInt64(timeoutSeconds * 1e9)
        while true {
            for (name, client) in [("ProfileService", link.profile), ("NotificationService", link.notification)] {
                let ping = try? await client.call(Ops.Ping.self, Empty(), timeoutMs: 5_000)
                let cursor = ping?.counters["subscriber.auth.cursor"] ?? 0
                // With replicas a ping reaches one of them, and only the active one applies
                // events (the others report no cursor): the highest seen counts.
                cursors.withLock { $0[name] = max($0[name] ?? 0, cursor) }
            }
            if cursors.withLock({ $0.values.allSatisfy { $0 >= head } }) { break }
            guard Clock.nowNs() < end else {
                throw LoadTestError("the replicas did not apply AuthService's events up to \(head) in \(Int(timeoutSeconds)) s")
            }
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        return Clock.ms(from: t0, to: Clock.nowNs()) / 1000
    }

    /// Runs an idempotent call, again after 503/504 (up to 5 attempts, 1 s apart).
    /// - Parameter passing: statuses whose `ServiceError` is thrown as it is, for the caller.
    /// - Throws: `LoadTestError` with `what` and the last error.
    private static func retrying<T: Sendable>(
        _ what: String, passing: Set<Int> = [], _ call: @Sendable () async throws -> T
    ) async throws -> T {
        var attempt = 1
        while true {
            do { return try await call() } catch let e as ServiceError where (e.status == 503 || e.status == 504) && attempt < 5 {
                attempt += 1
                try await Task.sleep(nanoseconds: 1_000_000_000)
            } catch let e as ServiceError where passing.contains(e.status) {
                throw e
            } catch {
                throw LoadTestError("\(what): \(error)")
            }
        }
    }
}
