import Foundation
import Support
import Wire

/// One registered load-test user.
struct LoadUser: Codable, Sendable {
    var username: String
    var id: String
    /// A session token; empty for an adopted user not logged in yet (`Setup.ensureTokens`).
    var token: String
}

/// The users and follow graph a scenario runs on, cached in a JSON file so that repeated runs
/// skip setup. User 0 is the celebrity. Imported users have no token until a scenario acts as
/// them (`Setup.ensureTokens`).
struct Population: Codable, Sendable {
    var url: String
    var seed: UInt64
    /// Username prefix, unique per population so a fresh one never collides in the same database.
    var prefix: String
    var users: [LoadUser]
    /// Users 1...celebrityFollowers follow user 0 with notifyPosts.
    var celebrityFollowers = 0
    /// Whether the power-law graph has been built for `users.count` users.
    var graphUsers = 0
    var graphFollows = 0
}

/// Setup: creates users (bulk import over ZeroMQ, or HTTP registrations), builds the power-law
/// follow graph and the celebrity's followers.
enum Setup {
    static let password = "loadtest-password"

    /// Loads the cached population (when its celebrity's token, or a login as the celebrity,
    /// still works) or starts a new one, then creates up to `options.users`, builds the graph,
    /// and makes `followers` follow the celebrity: through the services' bulk imports
    /// (`BulkImport`, the default) or through the HTTP API (`--register-via http`). Prints each
    /// phase's time and the total.
    /// - Throws: `LoadTestError` when registrations, imports or follows fail.
    static func run(
        _ api: GatewayAPI, _ options: Options, followers wanted: Int? = nil, buildGraph: Bool = true
    ) async throws -> Population {
        let t0 = Clock.nowNs()
        var phases: [BulkImport.Phase] = []
        func phase<T>(_ name: String, _ body: () async throws -> T) async rethrows -> T {
            let start = Clock.nowNs()
            defer { phases.append((name, Clock.ms(from: start, to: Clock.nowNs()) / 1000)) }
            return try await body()
        }
        let path = options.usersFilePath
        var pop = try await phase("load users file") { try await cached(api, options, path: path) }
        if pop == nil, let prefix = options.adopt {
            pop = try await adopt(api, prefix: prefix, count: max(2, options.users), options: options)
            try save(pop!, path)
        }
        var population =
            pop
            ?? Population(
                url: options.url, seed: options.seed,
                prefix: "lt\(String(UInt32.random(in: 0...UInt32.max) % 1_000_000, radix: 36))", users: [])
        let n = max(2, options.users)
        let f = min(wanted ?? options.followers ?? (n - 1), n - 1)
        let graphWanted = buildGraph && options.followsPerUser > 0 && population.graphUsers < n
        let work = population.users.count < n || graphWanted || population.celebrityFollowers < f
        let link = options.registerVia == .import && work ? try await Self.link(options) : nil
        defer { link?.shutdown() }
        if population.users.count < n {
            if let link {
                phases += try await BulkImport.users(link, &population, count: n, options: options, path: path)
            } else {
                try await phase("register users") {
                    try await register(api, &population, count: n, concurrency: options.registerConcurrency, path: path)
                }
            }
        }
        if graphWanted {
            try await phase("follow graph") {
                let edges = followGraphEdges(count: n, options: options)
                if let link {
                    let byFollowee = Dictionary(grouping: edges, by: \.1).map { (followee: $0.key, followers: $0.value.map(\.0)) }
                    try await BulkImport.follows(
                        link, population, edges: byFollowee.sorted { $0.followee < $1.followee }, notifyPosts: false,
                        options: options, label: "follow graph")
                } else {
                    population = try await ensureTokens(api, population, Array(0..<n), options: options)
                    try await follow(
                        api, population, edges: edges, notifyPosts: false, concurrency: options.concurrency,
                        label: "follow graph")
                }
                population.graphUsers = n
                population.graphFollows = edges.count
            }
        }
        if population.celebrityFollowers < f {
            try await phase("celebrity followers") {
                let followers = Array(max(1, population.celebrityFollowers + 1)...f)
                if let link {
                    try await BulkImport.follows(
                        link, population, edges: [(0, followers)], notifyPosts: true, options: options,
                        label: "celebrity followers")
                } else {
                    population = try await ensureTokens(api, population, followers, options: options)
                    try await follow(
                        api, population, edges: followers.map { ($0, 0) }, notifyPosts: true,
                        concurrency: options.concurrency, label: "celebrity followers")
                }
                population.celebrityFollowers = f
            }
        }
        if let link {
            // The celebrity's session marks the users file as valid on this system.
            population = try await phase("celebrity session") {
                try await ensureTokens(api, population, [0], options: options, saving: false, link: link)
            }
            phases.append(("replicas caught up", try await BulkImport.waitForReplicas(link)))
        }
        if work {
            try await phase("save users file") { try save(population, path) }
            log(
                String(format: "setup: done in %.1f s (", Clock.ms(from: t0, to: Clock.nowNs()) / 1000)
                    + phases.map { String(format: "%@ %.1f s", $0.name, $0.seconds) }.joined(separator: ", ") + ")")
        }
        return population
    }

    /// The users file at `path` when it belongs to this system: same URL and seed (and prefix
    /// when adopting), and its celebrity's token still valid, or (an import saves no tokens)
    /// the celebrity still able to log in.
    /// - Returns: the population (with the celebrity's token), or nil to start a new one.
    /// - Throws: `LoadTestError` when the file cannot be read although it exists... never: an
    ///   unreadable file is reported and replaced.
    /// The link for the bulk imports, nil when the stack does not serve them (said once, with how
    /// to ask for them: setup then goes through the HTTP API, one argon2id hash per user).
    /// - Throws: as `ServiceLink.init`, but not for refused imports.
    private static func link(_ options: Options) async throws -> ServiceLink? {
        do { return try await ServiceLink(overrides: options.serviceEnvironment) } catch let refused as ServiceLink.ImportsRefused
        {
            log("setup: \(refused); setting up through the HTTP API instead")
            return nil
        }
    }

    private static func cached(_ api: GatewayAPI, _ options: Options, path: String) async throws -> Population? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let p: Population
        do { p = try load(path) } catch {
            log("setup: cannot read \(path) (\(error)); starting a new population")
            return nil
        }
        guard p.url == options.url, p.seed == options.seed, let first = p.users.first,
            options.adopt == nil || options.adopt == p.prefix
        else { return nil }
        var status = 0
        if !first.token.isEmpty {
            status = await api.call("GET", "/v1/me", token: first.token).status
            if status == 200 {
                log("setup: reusing \(p.users.count) users from \(path)")
                return p
            }
        }
        if case .success(let token) = await api.login(username: first.username, password: password) {
            var renewed = p
            renewed.users[0].token = token
            log("setup: reusing \(p.users.count) users from \(path) (the celebrity logged in again)")
            return renewed
        }
        log("setup: cached users in \(path) are not valid here (HTTP \(status)); creating new ones")
        return nil
    }

    /// Adopts users `<prefix>_0` … `<prefix>_<count-1>` registered earlier with the load-test
    /// password, through the public API: user 0 logs in, ids come from
    /// `GET /v1/users/{username}` with its token (stopping at the
    /// first unknown one), no tokens yet (`ensureTokens` logs in only the users a scenario acts
    /// as, so a 100,000-user population costs a few thousand argon2 verifications, not 100,000).
    /// When the celebrity already has every other adopted user as a follower, they are taken to
    /// be the setup's `notifyPosts` followers.
    /// - Throws: `LoadTestError` when a lookup fails or the celebrity is unknown.
    static func adopt(_ api: GatewayAPI, prefix: String, count n: Int, options: Options) async throws -> Population {
        let found = Locked([Int: LoadUser]())
        let failures = Locked([String]())
        let t0 = Clock.nowNs()
        let progress = Progress { "setup: adopting \(prefix) users: \(found.withLock { $0.count })/\(n)" }
        // The lookups need a session: the celebrity's (user 0), which it keeps.
        let celebrityToken: String
        switch await api.login(username: "\(prefix)_0", password: password) {
        case .success(let token): celebrityToken = token
        case .failure(let e): throw LoadTestError("adopt: \(e.description)")
        }
        let celebrityFollowerCount = Locked(0)
        await forEachConcurrently(n, limit: options.concurrency) { i in
            let username = "\(prefix)_\(i)"
            let r = await api.call("GET", "/v1/users/\(username)", token: celebrityToken)
            if r.status == 404 { return }
            guard r.status == 200, let user = r.object["user"] as? [String: Any], let id = user["id"] as? String
            else {
                failures.withLock { $0.append("adopt \(username): HTTP \(r.status) \(r.error ?? "")") }
                return
            }
            found.withLock { $0[i] = LoadUser(username: username, id: id, token: i == 0 ? celebrityToken : "") }
            if i == 0, let followers = (r.object["counts"] as? [String: Any])?["followers"] as? Int {
                celebrityFollowerCount.withLock { $0 = followers }
            }
        }
        progress.stop()
        if let f = failures.withLock({ $0.first }) { throw LoadTestError(f) }
        let all = found.withLock { $0 }
        let celebrityFollowers = celebrityFollowerCount.withLock { $0 }
        var users: [LoadUser] = []
        while let u = all[users.count] { users.append(u) }
        guard users.count >= 2 else { throw LoadTestError("adopt: no users \(prefix)_0, \(prefix)_1 here") }
        log(
            String(
                format: "setup: adopted %d users %@_* in %.1f s (celebrity has %d followers)", users.count, prefix,
                Clock.ms(from: t0, to: Clock.nowNs()) / 1000, celebrityFollowers))
        return Population(
            url: options.url, seed: options.seed, prefix: prefix, users: users,
            celebrityFollowers: celebrityFollowers >= users.count - 1 ? users.count - 1 : 0)
    }

    /// Gets a session for each user among `indices` that has no token yet (adopted or imported
    /// ones): with `--register-via import` in bulk over ZeroMQ (`BulkImport.sessions`, through
    /// `link` or a `ServiceLink` of its own), falling back to logins, with a line saying why, when
    /// AuthService does not allow it; with `--register-via http` one `POST /v1/auth/login` each
    /// (argon2id: about 28 a second on two cores). Unless `saving` is false, saves the population
    /// when any user got a token.
    /// - Returns: the population with their tokens.
    /// - Throws: `LoadTestError` when a login or an import fails.
    static func ensureTokens(
        _ api: GatewayAPI, _ population: Population, _ indices: [Int], options: Options, saving: Bool = true,
        link: ServiceLink? = nil
    ) async throws -> Population {
        // Each once: callers may name a user twice (a streaming user who is also a checked follower).
        var seen = Set<Int>()
        let missing = indices.filter { population.users[$0].token.isEmpty && seen.insert($0).inserted }
        if missing.isEmpty { return population }
        let t0 = Clock.nowNs()
        var got: [Int: String]? = nil
        if options.registerVia == .import {
            let own = link == nil ? try await Self.link(options) : nil
            defer { own?.shutdown() }
            do {
                guard let link = link ?? own else { throw ServiceLink.ImportsRefused() }
                got = try await BulkImport.sessions(link, population, missing, options: options)
                log(
                    String(
                        format: "setup: %d sessions imported in %.1f s", missing.count,
                        Clock.ms(from: t0, to: Clock.nowNs()) / 1000))
            } catch let e as ServiceError where e.status == 403 {
                log("setup: \(e.message); logging \(missing.count) users in over HTTP instead")
            } catch is ServiceLink.ImportsRefused {
                log("setup: logging \(missing.count) users in over HTTP")
            }
        }
        let tokens: [Int: String]
        if let got {
            tokens = got
        } else {
            tokens = try await logIn(api, population, missing, options: options)
            log(
                String(
                    format: "setup: %d users logged in in %.1f s", missing.count,
                    Clock.ms(from: t0, to: Clock.nowNs()) / 1000))
        }
        var updated = population
        for (i, token) in tokens { updated.users[i].token = token }
        if saving { try save(updated, options.usersFilePath) }
        return updated
    }

    /// Logs in the users `missing` (`POST /v1/auth/login`, `options.registerConcurrency` at once).
    /// - Returns: the tokens by population index.
    /// - Throws: `LoadTestError` when a login fails.
    private static func logIn(_ api: GatewayAPI, _ population: Population, _ missing: [Int], options: Options)
        async throws -> [Int: String]
    {
        let tokens = Locked([Int: String]())
        let failures = Locked([String]())
        let progress = Progress { "setup: logging in \(tokens.withLock { $0.count })/\(missing.count) users" }
        let users = population.users
        await forEachConcurrently(missing.count, limit: options.registerConcurrency) { k in
            let i = missing[k]
            switch await api.login(username: users[i].username, password: password) {
            case .success(let token): tokens.withLock { $0[i] = token }
            case .failure(let e): failures.withLock { $0.append(e.description) }
            }
        }
        progress.stop()
        if let f = failures.withLock({ $0.first }) { throw LoadTestError(f) }
        return tokens.withLock { $0 }
    }

    /// Writes the users file (JSON, through the wire format's writer: a million users in about
    /// a second, where Foundation's encoder took many), atomically.
    /// - Throws: a file error.
    static func save(_ p: Population, _ path: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent.isEmpty
                ? "." : (path as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true)
        try Data(try WireJSON.encode(p)).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Reads a users file written by `save` (or by an older LoadTest: the same JSON with sorted
    /// members). - Throws: a file error, `JSONParseError`, `DecodingError`.
    static func load(_ path: String) throws -> Population {
        try WireJSON.decode(Population.self, from: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    private static func register(
        _ api: GatewayAPI, _ population: inout Population, count n: Int, concurrency: Int, path: String
    ) async throws {
        let start = population.users.count
        let prefix = population.prefix
        let results = Locked([Int: LoadUser]())
        let registered = Locked(0)
        let failures = Locked([String]())
        let t0 = Clock.nowNs()
        let progress = Progress {
            let done = registered.withLock { $0 }
            let s = Clock.ms(from: t0, to: Clock.nowNs()) / 1000
            return String(
                format: "setup: registered %d/%d users (%.1f/s)", start + done, n,
                Double(done) / max(s, 0.001))
        }
        // In chunks, saving every 30 s (not after each chunk: a save writes every user so far),
        // so an interrupted setup resumes near where it stopped.
        var chunkStart = start
        var lastSave = Clock.nowNs()
        while chunkStart < n {
            let chunkEnd = min(n, chunkStart + 500)
            let base = chunkStart
            await forEachConcurrently(chunkEnd - chunkStart, limit: concurrency) { k in
                let i = base + k
                let username = "\(prefix)_\(i)"
                switch await api.registerOrLogin(username: username, password: password) {
                case .success(let u):
                    results.withLock { $0[i] = LoadUser(username: username, id: u.id, token: u.token) }
                    registered.withLock { $0 += 1 }
                case .failure(let e): failures.withLock { $0.append(e.description) }
                }
            }
            if let f = failures.withLock({ $0.first }) {
                progress.stop()
                throw LoadTestError(f)
            }
            let got = results.withLock { r in
                defer { r.removeAll(keepingCapacity: true) }
                return r
            }
            for i in chunkStart..<chunkEnd { population.users.append(got[i]!) }
            if Clock.nowNs() - lastSave > 30_000_000_000 || chunkEnd == n {
                try save(population, path)
                lastSave = Clock.nowNs()
            }
            chunkStart = chunkEnd
        }
        progress.stop()
        log(
            String(
                format: "setup: %d users registered in %.1f s", n - start,
                Clock.ms(from: t0, to: Clock.nowNs()) / 1000))
    }

    /// Each user follows ~`followsPerUser` others picked by Zipf rank among users 1..<n, so a few
    /// users get most followers (power law). The celebrity (user 0) is left to the celebrity
    /// followers. - Returns: the edges (follower, followee), seeded.
    private static func followGraphEdges(count n: Int, options: Options) -> [(Int, Int)] {
        var rng = SeededRandom(seed: options.seed &+ 0x6772_6170_68)
        let zipf = ZipfSampler(count: n - 1, exponent: 1.0)
        var edges: [(Int, Int)] = []
        for u in 0..<n {
            let degree = min(n - 2, max(1, Int(Double(options.followsPerUser) * (0.5 + rng.unit()))))
            var seen = Set<Int>()
            var tries = 0
            while seen.count < degree && tries < degree * 10 {
                tries += 1
                let target = 1 + zipf.sample(&rng)
                if target != u { seen.insert(target) }
            }
            for t in seen.sorted() { edges.append((u, t)) }
        }
        return edges
    }

    private static func follow(
        _ api: GatewayAPI, _ population: Population, edges: [(Int, Int)], notifyPosts: Bool,
        concurrency: Int, label: String
    ) async throws {
        let users = population.users
        let done = Locked(0)
        let failures = Locked([String]())
        let t0 = Clock.nowNs()
        let progress = Progress {
            let d = done.withLock { $0 }
            return String(format: "setup: %@ %d/%d", label, d, edges.count)
        }
        await forEachConcurrently(edges.count, limit: concurrency) { k in
            let (from, to) = edges[k]
            var r = HTTPResult(status: 0, body: [], error: nil, scheduledNs: 0, finishedNs: 0)
            for _ in 0..<3 {
                r = await api.call(
                    "PUT", "/v1/users/\(users[to].username)/follow", token: users[from].token,
                    json: ["notifyPosts": notifyPosts])
                if r.status == 200 { break }
            }
            if r.status != 200 {
                failures.withLock {
                    $0.append(
                        "follow \(users[from].username) → \(users[to].username): HTTP \(r.status) \(r.error ?? String(decoding: r.body.prefix(200), as: UTF8.self))"
                    )
                }
            }
            done.withLock { $0 += 1 }
        }
        progress.stop()
        if let f = failures.withLock({ $0.first }) { throw LoadTestError(f) }
        log(
            String(
                format: "setup: %@: %d follows in %.1f s", label, edges.count,
                Clock.ms(from: t0, to: Clock.nowNs()) / 1000))
    }
}

/// Whether stderr is a terminal (progress lines are rewritten in place only there).
let stderrIsTerminal = isatty(2) == 1

/// Prints a line on stderr (clearing a progress line first on a terminal).
func log(_ message: String) {
    FileHandle.standardError.write(Data(((stderrIsTerminal ? "\r\u{1B}[K" : "") + message + "\n").utf8))
}

/// A progress line on stderr, rewritten in place once per second until `stop()`; when stderr
/// is not a terminal (CI logs), a plain line every 5 seconds instead.
final class Progress: @unchecked Sendable {
    // @unchecked: `running` is guarded by `lock`; `render` is Sendable.
    private let lock = NSLock()
    private var running = true
    private let render: @Sendable () -> String
    private let done = DispatchSemaphore(value: 0)

    init(_ render: @escaping @Sendable () -> String) {
        self.render = render
        let t = Thread { [self] in
            var tick = 0
            while true {
                for _ in 0..<10 {
                    Thread.sleep(forTimeInterval: 0.1)
                    if !self.isRunning { break }
                }
                if !self.isRunning { break }
                tick += 1
                if stderrIsTerminal {
                    FileHandle.standardError.write(Data(("\r\u{1B}[K" + self.render()).utf8))
                } else if tick % 5 == 0 {
                    FileHandle.standardError.write(Data((self.render() + "\n").utf8))
                }
            }
            if stderrIsTerminal { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            self.done.signal()
        }
        t.start()
    }

    private var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        return running
    }

    /// Stops and clears the line; waits for the thread.
    func stop() {
        lock.lock()
        let was = running
        running = false
        lock.unlock()
        if was { done.wait() }
    }
}
