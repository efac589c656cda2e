import Foundation
import Support

/// Scenario `likes`: an open-loop constant rate of likes on fresh posts whose owners hold
/// notification streams; every like must yield exactly one `like` notification to the owner.
enum LikesScenario {
    private struct Pending {
        var recipient: Int
        var key: NotificationKey
        var scheduledNs: UInt64
    }

    private struct State {
        var completed = 0
        var ok = 0
        var errors: [String: Int] = [:]
        var http: [Double] = []
        var expected: [Pending] = []
    }

    /// Runs the scenario and returns the report (not yet written).
    /// - Throws: `LoadTestError` when setup fails.
    static func run(_ api: GatewayAPI, _ options: Options, memoryPids: [String: Int32]? = nil)
        async throws -> (RunReport, PlotData)
    {
        let setup = try await Setup.run(api, options, followers: 0)
        let n = setup.users.count
        let k = min(options.streams, n - 1)
        let o = min(n - 1, max(k, options.owners ?? k))
        let owners = Array(1...o)
        // The schedule: unique (liker, post) pairs, seeded.
        let total = Int(options.rate * options.duration)
        guard total <= o * (n - 2) else {
            throw LoadTestError(
                "\(total) likes need more unique (liker, post) pairs than \(o) posts × \(n - 2) likers")
        }
        var rng = SeededRandom(seed: options.seed &+ 0x6c_696b_6573)
        var pairs = Set<Int>()
        var plan: [(liker: Int, owner: Int)] = []
        plan.reserveCapacity(total)
        while plan.count < total {
            let owner = owners[Int(rng.next() % UInt64(o))]
            let liker = Int(rng.next() % UInt64(n))
            if liker == owner || !pairs.insert(liker * n + owner).inserted { continue }
            plan.append((liker, owner))
        }
        // Likers are drawn from every user; only the owners and the likers act, so only they log
        // in (imported and adopted users have no session yet).
        let actors = Set(owners).union(plan.map(\.liker)).sorted()
        let pop = try await Setup.ensureTokens(api, setup, actors, options: options)
        var report = RunReport(
            scenario: "likes", seed: options.seed, url: options.url, startedAt: RunReport.timestamp())
        report.parameters = [
            "users": "\(n)", "rate": "\(options.rate)", "duration": "\(options.duration)",
            "streams": "\(k)", "owners": "\(o)",
        ]

        // Fresh posts (so the same seed's likes are new pairs on every run).
        let runTag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let posts = Locked([Int: String]())
        let postErrors = Locked([String]())
        await forEachConcurrently(owners.count, limit: options.concurrency) { i in
            let owner = owners[i]
            let (id, r) = await api.createPost(
                token: pop.users[owner].token, caption: "lt-\(runTag)-\(owner)")
            if let id {
                posts.withLock { $0[owner] = id }
            } else {
                postErrors.withLock { $0.append("create post: HTTP \(r.status) \(r.error ?? "")") }
            }
        }
        if let e = postErrors.withLock({ $0.first }) { throw LoadTestError(e) }
        let postOf = posts.withLock { $0 }
        log("likes: \(owners.count) posts created; opening \(k) streams")
        let streamUsers = Array(owners.prefix(k))
        let resumeAfter = try await StreamSet.resumePoints(
            api: api, population: pop, users: streamUsers, concurrency: options.concurrency)
        let (streams, streamMemory) = try await StreamMemory.measure(api: api, pids: memoryPids, streams: k) {
            try await StreamSet(api: api, population: pop, users: streamUsers, resumeAfter: resumeAfter)
        }
        report.streamsOpen = k
        report.gatewayStreamMemory = streamMemory

        let state = Locked(State())
        // CPU from here (setup done, streams open) to the end of the grace period.
        let cpu = ServiceCPU(pids: memoryPids, gatewayPort: URLComponents(string: options.url)?.port ?? 80)
        let t0 = Clock.nowNs() + 200_000_000
        let interval = 1e9 / max(options.rate, 0.001)
        for (i, p) in plan.enumerated() {
            let at = t0 + UInt64(Double(i) * interval)
            let postId = postOf[p.owner]!
            let key = NotificationKey(type: "like", postId: postId, actorId: pop.users[p.liker].id)
            let owner = p.owner
            api.engine.send(
                api.request("PUT", "/v1/posts/\(postId)/like", token: pop.users[p.liker].token, at: at)
            ) { r in
                state.withLock { s in
                    s.completed += 1
                    s.http.append(Clock.ms(from: r.scheduledNs, to: r.finishedNs))
                    if r.status == 200 {
                        s.ok += 1
                        s.expected.append(Pending(recipient: owner, key: key, scheduledNs: r.scheduledNs))
                    } else {
                        s.errors[
                            r.status == 0 ? "transport: \(r.error ?? "?")" : String(r.status), default: 0] += 1
                    }
                }
            }
        }
        let progress = Progress {
            let (c, ok, e) = state.withLock { ($0.completed, $0.ok, $0.errors.values.reduce(0, +)) }
            let t = Clock.ms(from: t0, to: Clock.nowNs()) / 1000
            return String(
                format: "likes: t=%.0fs sent %d/%d ok %d errors %d events %d", max(0, t), c, total, ok, e,
                streams.eventCount)
        }
        // Wait for every response, then for the streamed notifications (or the grace period).
        // Responses are awaited until 45 s after the last scheduled send (requests time out at 30 s,
        // so this only trips if the transport itself wedges); the missing ones count as errors.
        let responseDeadline = t0 + UInt64(options.duration * 1e9) + 45_000_000_000
        while state.withLock({ $0.completed }) < total && Clock.nowNs() < responseDeadline {
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        let endNs = Clock.nowNs()
        let streamed = Set(owners.prefix(k))
        let wantStreamed = state.withLock {
            $0.expected.filter { streamed.contains($0.recipient) }.count
        }
        let graceEnd = endNs + UInt64(options.grace * 1e9)
        while Clock.nowNs() < graceEnd {
            let got = Set(
                streams.events.filter { $0.key.type == "like" }.map {
                    "\($0.user)|\($0.key.postId)|\($0.key.actorId)"
                }
            ).count
            if got >= wantStreamed { break }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        // A short extra wait so late duplicates have a chance to show up.
        try await Task.sleep(nanoseconds: 300_000_000)
        progress.stop()
        streams.close()
        cpu.record(into: &report, actions: total)
        report.streamsClosedEarly = streams.closedEarly
        report.streamReconnects = streams.reconnects
        report.streamReconnectFailures = streams.reconnectFailures

        var s = state.withLock { $0 }
        if s.completed < total { s.errors["no response", default: 0] += total - s.completed }
        report.durationS = Clock.ms(from: t0, to: endNs) / 1000
        report.actionsSent = total
        report.actionsOK = s.ok
        report.throughputPerSecond = Double(s.ok) / max(options.duration, 0.001)
        report.errorsByStatus = s.errors
        report.httpLatencyMs = LatencySummary(s.http)

        // Match stream events with expectations.
        var firstSeen: [String: UInt64] = [:]
        var seenCount: [String: Int] = [:]
        let events = streams.events
        for e in events where e.key.type == "like" {
            let id = "\(e.user)|\(e.key.postId)|\(e.key.actorId)"
            seenCount[id, default: 0] += 1
            if firstSeen[id] == nil { firstSeen[id] = e.ns }
        }
        var d = DeliveryReport()
        var plots = PlotData()
        var latencies: [Double] = []
        var expectedIds = Set<String>()
        var listChecks: [Int: Set<NotificationKey>] = [:]
        for p in s.expected {
            d.expected += 1
            let id = "\(p.recipient)|\(p.key.postId)|\(p.key.actorId)"
            expectedIds.insert(id)
            if streamed.contains(p.recipient) {
                if let ns = firstSeen[id] {
                    d.streamed += 1
                    let ms = Clock.ms(from: p.scheduledNs, to: ns)
                    latencies.append(ms)
                    plots.delivery.append(Sample(atS: Clock.ms(from: t0, to: p.scheduledNs) / 1000, ms: ms))
                    d.duplicates += seenCount[id]! - 1
                } else {
                    d.lost += 1
                }
            } else {
                listChecks[p.recipient, default: []].insert(p.key)
            }
        }
        let postIds = Set(postOf.values)
        for (id, _) in seenCount where !expectedIds.contains(id) {
            if postIds.contains(String(id.split(separator: "|")[1])) { d.unexpected += 1 }
        }
        // Owners without a stream: their lists.
        if !listChecks.isEmpty {
            let found = Locked((listed: 0, lost: 0, dup: 0))
            let recipients = Array(listChecks.keys)
            let listChecks = listChecks
            await forEachConcurrently(recipients.count, limit: options.concurrency) { i in
                let u = recipients[i]
                let keys = listChecks[u]!
                var counts: [NotificationKey: Int] = [:]
                let deadline = Clock.nowNs() + UInt64(options.grace * 1e9)
                repeat {
                    counts =
                        await NotificationLists.count(api, token: pop.users[u].token, keys: keys, scanAll: true)
                        ?? [:]
                    if keys.allSatisfy({ counts[$0] != nil }) { break }
                    try? await Task.sleep(nanoseconds: 200_000_000)
                } while Clock.nowNs() < deadline
                let listed = keys.filter { counts[$0] != nil }.count
                let dup = counts.values.reduce(0) { $0 + max(0, $1 - 1) }
                found.withLock {
                    $0.listed += listed
                    $0.lost += keys.count - listed
                    $0.dup += dup
                }
            }
            let f = found.withLock { $0 }
            d.listed = f.listed
            d.lost += f.lost
            d.duplicates += f.dup
        }
        d.latencyMs = LatencySummary(latencies)
        d.timeline = TimelinePoint.timeline(plots.delivery)
        report.delivery = d
        // Counts equal their lists: each post's likeCount against its whole likes list (a
        // like answered 504 may or may not have been applied, but either way both agree).
        let compared = Array(postOf.values)
        let mismatches = Locked(0)
        let viewer = pop.users[owners[0]].token
        await forEachConcurrently(compared.count, limit: options.concurrency) { i in
            let post = compared[i]
            let read = await api.call("GET", "/v1/posts/\(post)", token: viewer)
            var listed = 0
            var cursor: String? = nil
            var complete = false
            for _ in 0..<1_000 {
                let page = await api.call(
                    "GET", "/v1/posts/\(post)/likes?limit=100" + (cursor.map { "&cursor=\($0)" } ?? ""), token: viewer)
                guard page.status == 200 else { break }
                listed += (page.object["items"] as? [Any])?.count ?? 0
                cursor = page.object["nextCursor"] as? String
                if cursor == nil {
                    complete = true
                    break
                }
            }
            if read.status != 200 || !complete || (read.object["likeCount"] as? Int) != listed {
                mismatches.withLock { $0 += 1 }
            }
        }
        report.countsCompared = compared.count
        report.countMismatches = mismatches.withLock { $0 }
        report.peakRSSKB = ServiceMemory.peaks(pids: memoryPids, gatewayPort: URLComponents(string: options.url)?.port ?? 80)

        if options.baseline {
            let bytes =
                options.payloadBytes
                ?? (events.isEmpty ? 400 : events.map(\.bytes).reduce(0, +) / events.count)
            await Baselines.run(
                &report, &plots, engine: api.engine, streams: api.streams, options: options, subscribers: k,
                rate: options.rate,
                duration: options.duration, payloadBytes: bytes, fanout: false)
        }
        Checks.apply(&report)
        return (report, plots)
    }
}

/// The pass/fail checks every scenario's report gets.
enum Checks {
    static func apply(_ r: inout RunReport) {
        func check(_ ok: Bool, _ name: String) {
            if ok { r.checks.append(name) } else { r.failures.append(name) }
        }
        check(r.delivery.lost == 0, "zero loss (lost \(r.delivery.lost) of \(r.delivery.expected))")
        check(r.delivery.duplicates == 0, "zero duplicates (\(r.delivery.duplicates))")
        check(r.errorsByStatus.isEmpty, "no HTTP errors (\(r.errorsByStatus))")
        check(r.delivery.expected > 0, "some notifications expected (\(r.delivery.expected))")
        if let n = r.countMismatches {
            check(n == 0, "like counts equal their lists (\(n) of \(r.countsCompared ?? 0) posts differ)")
        }
        // A stream that ended (its gateway died) is opened again and resumes after its last id.
        check(
            r.streamReconnects >= r.streamsClosedEarly,
            "every stream that ended was opened again (\(r.streamsClosedEarly) ended, \(r.streamReconnects) reopened)")
        if let b = r.baseline { check(b.lost == 0, "baseline lost nothing (\(b.lost))") }
        if let n = r.nchanBaseline {
            check(n.lost == 0, "nchan baseline lost nothing (\(n.lost))")
            check(n.publishErrors ?? 0 == 0, "nchan baseline publishes answered 2xx (\(n.publishErrors ?? 0) did not)")
        }
    }
}
