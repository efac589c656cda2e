import Foundation
import Support

/// Scenario `celebrity`: user 0, followed by F users with notifyPosts, posts P times while K of
/// them hold streams. Streamed `post` notifications give the delivery latency; followers' lists
/// (all, or a seeded sample) are polled until they hold every post: the persistence latency.
enum CelebrityScenario {
    static func run(_ api: GatewayAPI, _ options: Options, memoryPids: [String: Int32]? = nil)
        async throws -> (RunReport, PlotData)
    {
        let setup = try await Setup.run(api, options, followers: options.followers)
        let n = setup.users.count
        let f = setup.celebrityFollowers
        guard f > 0 else { throw LoadTestError("the celebrity has no followers (--followers)") }
        let k = min(options.streams, f)
        var report = RunReport(
            scenario: "celebrity", seed: options.seed, url: options.url, startedAt: RunReport.timestamp())
        report.parameters = [
            "users": "\(n)", "followers": "\(f)", "streams": "\(k)", "posts": "\(options.posts)",
        ]
        // Streaming followers spread evenly over all of them (user i, i = 1 + j·f/k): a fan-out
        // walks followers in order, so the first k would all be in its first batch and show
        // only how fast the fan-out starts, not how fast it reaches everyone.
        let streamUsers = (0..<k).map { 1 + $0 * f / k }
        // The followers whose lists are checked: all, or a seeded sample.
        var rng = SeededRandom(seed: options.seed &+ 0x63_656c_6562)
        var followers = Array(1...f)
        let sampleSize = min(f, options.checkSample ?? min(f, 2_000))
        if sampleSize < f {
            for i in 0..<sampleSize {
                let j = i + Int(rng.next() % UInt64(f - i))
                followers.swapAt(i, j)
            }
            followers = Array(followers.prefix(sampleSize))
        }
        let pop = try await Setup.ensureTokens(api, setup, [0] + streamUsers + followers, options: options)
        let celeb = pop.users[0]
        let resumeAfter = try await StreamSet.resumePoints(
            api: api, population: pop, users: streamUsers, concurrency: options.concurrency)
        let (streams, streamMemory) = try await StreamMemory.measure(api: api, pids: memoryPids, streams: k) {
            try await StreamSet(api: api, population: pop, users: streamUsers, resumeAfter: resumeAfter)
        }
        report.streamsOpen = k
        report.gatewayStreamMemory = streamMemory
        log("celebrity: \(k) streams open; posting \(options.posts) time(s)")

        struct PostResult: Sendable {
            var index: Int
            var id: String?
            var status: Int
            var error: String?
            var scheduledNs: UInt64
            var finishedNs: UInt64
        }
        let results = Locked([PostResult]())
        let runTag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        // CPU from here (setup done, streams open) to the end of the grace period.
        let cpu = ServiceCPU(pids: memoryPids, gatewayPort: URLComponents(string: options.url)?.port ?? 80)
        let t0 = Clock.nowNs() + 100_000_000
        for p in 0..<options.posts {
            let at = t0 + UInt64(Double(p) * options.postInterval * 1e9)
            let req = api.request(
                "POST", "/v1/posts", token: celeb.token,
                json: [
                    "postType": "photo",
                    "mediaURL": "https://media.example/loadtest/celeb-\(runTag)-\(p).jpg",
                    "thumbnailURL": "https://media.example/loadtest/celeb-\(runTag)-\(p)-t.jpg",
                    "caption": "celebrity \(runTag) \(p)",
                ], at: at)
            api.engine.send(req) { r in
                results.withLock {
                    $0.append(
                        PostResult(
                            index: p, id: r.object["id"] as? String, status: r.status, error: r.error,
                            scheduledNs: r.scheduledNs, finishedNs: r.finishedNs))
                }
            }
        }
        let progress = Progress {
            let done = results.withLock { $0.count }
            return "celebrity: posts \(done)/\(options.posts), streamed events \(streams.eventCount)"
        }
        // Persistence: from the first post on, poll the (sampled) followers' lists until each
        // holds every post (a follower counts as done once all posts were answered and seen).
        // Per follower: when each post was first seen in the list; when all were; the latest
        // check that still missed one. Cheap enough for `--check-interval 0.2`: a follower is
        // asked only until its list is complete, for the newest page of `limit` = the scenario's
        // posts (nothing else notifies the followers during the run; the posts not answered yet
        // count too, as their notifications may already sit on top), and a round's checks are
        // spread evenly over the interval (open loop, no burst), at most `--check-rate` a second.
        struct Persisted {
            var seen: [Int: [NotificationKey: UInt64]] = [:]
            var found: [Int: UInt64] = [:]
            var lastMiss: [Int: UInt64] = [:]
            var dup: [Int: Int] = [:]
            var requests = 0
        }
        let persisted = Locked(Persisted())
        let checkDeadline =
            t0
            + UInt64(
                (Double(options.posts) * options.postInterval + max(options.grace, 5)
                    + Double(sampleSize) / min(500, options.checkRate)) * 1e9)
        var remaining = followers
        var longestIntervalNs = 0.0
        while !remaining.isEmpty && Clock.nowNs() < checkDeadline {
            let known = results.withLock { $0 }
            let allPosted = known.count == options.posts
            let knownKeys = Set(
                known.compactMap { r in r.id.map { NotificationKey(type: "post", postId: $0, actorId: celeb.id) } })
            if knownKeys.isEmpty {
                if allPosted { break }
                try await Task.sleep(nanoseconds: 5_000_000)
                continue
            }
            let round = remaining
            let roundStart = Clock.nowNs()
            // Rounds start at most every `checkInterval` seconds: polling thousands of lists
            // back to back loads the services it is measuring (a 100,000 fan-out took 49 s
            // instead of ~12 s with 2,000 lists polled continuously).
            let spanNs = max(options.checkInterval, Double(round.count) / options.checkRate) * 1e9
            longestIntervalNs = max(longestIntervalNs, spanNs)
            let spacingNs = spanNs / Double(round.count)
            let limit = min(100, options.posts)
            await withTaskGroup(of: Void.self) { group in
                for (i, u) in round.enumerated() {
                    let at = roundStart + UInt64(Double(i) * spacingNs)
                    let token = pop.users[u].token
                    group.addTask {
                        let counts = await NotificationLists.newest(api, token: token, keys: knownKeys, limit: limit, at: at)
                        let now = Clock.nowNs()
                        persisted.withLock { s in
                            s.requests += 1
                            guard let counts else { return }
                            for (key, _) in counts where s.seen[u]?[key] == nil { s.seen[u, default: [:]][key] = now }
                            s.dup[u] = counts.values.reduce(0) { $0 + max(0, $1 - 1) }
                            if !knownKeys.allSatisfy({ counts[$0] != nil }) {
                                // Not there when the list was read, which was after `at`.
                                s.lastMiss[u] = at
                            } else if allPosted {
                                s.found[u] = now
                            }
                        }
                    }
                }
            }
            let found = persisted.withLock { $0.found }
            remaining = remaining.filter { found[$0] == nil }
            let next = roundStart + UInt64(spanNs)
            if !remaining.isEmpty {
                let now = Clock.nowNs()
                try await Task.sleep(nanoseconds: next > now ? next - now : 10_000_000)
            }
        }
        let responseDeadline = t0 + UInt64((Double(options.posts) * options.postInterval + 45) * 1e9)
        while results.withLock({ $0.count }) < options.posts && Clock.nowNs() < responseDeadline {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        let posted = results.withLock { $0 }.sorted { $0.index < $1.index }
        let ok = posted.filter { $0.id != nil && ($0.status == 201 || $0.status == 200) }
        report.actionsSent = options.posts
        report.actionsOK = ok.count
        if posted.count < options.posts { report.errorsByStatus["no response"] = options.posts - posted.count }
        for p in posted where p.id == nil {
            report.errorsByStatus[
                p.status == 0 ? "transport: \(p.error ?? "?")" : String(p.status), default: 0] += 1
        }
        report.httpLatencyMs = LatencySummary(
            posted.map { Clock.ms(from: $0.scheduledNs, to: $0.finishedNs) })
        let keys = Dictionary(
            uniqueKeysWithValues: ok.map {
                (NotificationKey(type: "post", postId: $0.id!, actorId: celeb.id), $0.scheduledNs)
            })
        let keySet = Set(keys.keys)
        let lastPostNs = ok.map(\.scheduledNs).max() ?? t0
        let pers = persisted.withLock { s in
            (
                found: s.found, lastMiss: s.lastMiss.values.max(),
                requests: s.requests,
                latencies: s.seen.values.flatMap { m in m.compactMap { e in keys[e.key].map { Clock.ms(from: $0, to: e.value) } }
                }
            )
        }
        var pr = PersistenceReport()
        pr.followersChecked = followers.count
        pr.found = pers.found.count
        pr.missing = followers.count - pers.found.count
        pr.latencyMs = LatencySummary(pers.latencies)
        if pr.missing == 0, let last = pers.found.values.max() {
            pr.allPersistedWithinMs = Clock.ms(from: lastPostNs, to: last)
            pr.allPersistedAfterMs = max(0, pers.lastMiss.map { Clock.ms(from: lastPostNs, to: $0) } ?? 0)
        }
        pr.checkRequests = pers.requests
        pr.effectiveCheckIntervalMs = longestIntervalNs / 1e6
        report.persistence = pr

        // Streams: wait for the rest within the grace period.
        let want = keySet.count * k
        let graceEnd = Clock.nowNs() + UInt64(options.grace * 1e9)
        while Clock.nowNs() < graceEnd {
            let got = Set(
                streams.events.filter { keySet.contains($0.key) }.map { "\($0.user)|\($0.key.postId)" }
            ).count
            if got >= want { break }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        try await Task.sleep(nanoseconds: 300_000_000)
        progress.stop()
        streams.close()
        cpu.record(into: &report, actions: ok.count * f)
        report.streamsClosedEarly = streams.closedEarly
        report.streamReconnects = streams.reconnects
        report.streamReconnectFailures = streams.reconnectFailures
        report.durationS = Clock.ms(from: t0, to: Clock.nowNs()) / 1000
        report.throughputPerSecond =
            Double(ok.count * f)
            / max(0.001, Clock.ms(from: t0, to: (pers.found.values.max() ?? Clock.nowNs())) / 1000)
        // Duplicates in the lists, once the measurement is over: the checks read only as many
        // items as there were posts, so one more read of each checked list's newest 100.
        let listDup = Locked(persisted.withLock { $0.dup })
        let checked = followers
        await forEachConcurrently(checked.count, limit: options.concurrency) { i in
            let u = checked[i]
            guard let counts = await NotificationLists.newest(api, token: pop.users[u].token, keys: keySet, limit: 100, at: 0)
            else { return }
            let dup = counts.values.reduce(0) { $0 + max(0, $1 - 1) }
            listDup.withLock { $0[u] = max($0[u] ?? 0, dup) }
        }

        var d = DeliveryReport()
        var plots = PlotData()
        var seen: [String: (ns: UInt64, count: Int)] = [:]
        let events = streams.events
        for e in events where e.key.type == "post" && e.key.actorId == celeb.id {
            let id = "\(e.user)|\(e.key.postId)"
            if let s = seen[id] { seen[id] = (s.ns, s.count + 1) } else { seen[id] = (e.ns, 1) }
            if !keySet.contains(e.key) { d.unexpected += 1 }
        }
        var latencies: [Double] = []
        let streamSet = Set(streamUsers)
        for (key, at) in keys {
            for u in streamUsers {
                d.expected += 1
                if let s = seen["\(u)|\(key.postId)"] {
                    d.streamed += 1
                    d.duplicates += s.count - 1
                    let ms = Clock.ms(from: at, to: s.ns)
                    latencies.append(ms)
                    plots.delivery.append(Sample(atS: Clock.ms(from: t0, to: at) / 1000 + ms / 1000, ms: ms))
                } else {
                    d.lost += 1
                }
            }
        }
        // Non-streamed sampled followers: the list check is their delivery.
        for u in followers where !streamSet.contains(u) {
            d.expected += keySet.count
            if pers.found[u] != nil { d.listed += keySet.count } else { d.lost += keySet.count }
        }
        d.duplicates += listDup.withLock { $0.values.reduce(0, +) }
        d.latencyMs = LatencySummary(latencies)
        d.timeline = TimelinePoint.timeline(plots.delivery)
        report.delivery = d
        report.peakRSSKB = ServiceMemory.peaks(pids: memoryPids, gatewayPort: URLComponents(string: options.url)?.port ?? 80)
        if options.baseline {
            let bytes =
                options.payloadBytes
                ?? (events.isEmpty ? 400 : events.map(\.bytes).reduce(0, +) / events.count)
            await Baselines.run(
                &report, &plots, engine: api.engine, streams: api.streams, options: options, subscribers: k,
                rate: 1 / max(options.postInterval, 0.001), duration: Double(options.posts) * options.postInterval,
                payloadBytes: bytes, fanout: true, messages: options.posts)
        }
        Checks.apply(&report)
        if let p = report.persistence {
            if p.missing == 0 {
                report.checks.append(
                    "every checked follower's list holds every post (\(p.followersChecked))")
            } else {
                report.failures.append("\(p.missing) of \(p.followersChecked) followers' lists lack a post")
            }
        }
        return (report, plots)
    }
}
