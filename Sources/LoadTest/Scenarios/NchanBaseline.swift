import Foundation
import Support

/// A real SSE server in the same shape as the scenario: nginx + nchan (`NginxNchan`), K
/// EventSource subscribers on `/sub/<channel>`, messages published by HTTP `POST /pub/<channel>`
/// at the scenario's rate and payload size, open loop through the same `CurlEngine` as the
/// scenario's own requests and streams.
///
/// Likes shape (`fanout: false`): subscriber i listens on channel `u<i>`, each message goes to one
/// subscriber, picked by the same seeded sequence as the libzmq baseline. Celebrity shape
/// (`fanout: true`): every subscriber listens on `all` and every message goes to all of them.
/// Latency is from the publish request's scheduled time to the event's arrival: the scenario's own
/// measure (scheduled HTTP request → SSE event).
enum NchanBaseline {
    private struct State {
        var opened = 0
        var failed: [Int: Int] = [:]
        var closedEarly = 0
        var probed = Set<Int>()
        /// Subscriber × message pairs seen, to count each once.
        var seen = Set<Int>()
        var duplicates = 0
        var samples: [Sample] = []
        var published = 0
        var publishErrors = 0
    }

    /// - Parameters:
    ///   - engine: publishes; `streams`: the subscribers (two connection caches, as `GatewayAPI`).
    ///   - messages: how many messages (default rate × duration).
    /// - Returns: the report and its samples.
    /// - Throws: `LoadTestError` when nginx + nchan cannot start, or the subscribers do not all
    ///   open and hear a probe within 60 s.
    static func run(
        engine: CurlEngine, streams: CurlEngine, subscribers k: Int, rate: Double, duration: Double, payloadBytes: Int,
        fanout: Bool,
        seed: UInt64, messages: Int? = nil
    ) async throws -> (BaselineReport, [Sample]) {
        let k = max(1, k)
        let total = messages ?? max(1, Int(rate * duration))
        let expected = fanout ? total * k : total
        let payload = max(payloadBytes, 32)
        let server = try NginxNchan(connections: k + engine.maxInFlight + 256)
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let state = Locked(State())
        let t0Box = Locked<UInt64>(0)
        func channel(_ i: Int) -> String { fanout ? "all" : "u\(i)" }

        for i in 0..<k {
            let handlers = StreamHandlers(
                onOpen: { status in
                    state.withLock { s in
                        if status == 200 { s.opened += 1 } else { s.failed[status, default: 0] += 1 }
                    }
                },
                onEvent: { event, ns in
                    if event.data == "probe" {
                        state.withLock { _ = $0.probed.insert(i) }
                        return
                    }
                    // "<seq> <scheduled ns> xxx…"
                    let fields = event.data.split(separator: " ", maxSplits: 2)
                    guard fields.count >= 2, let seq = Int(fields[0]), let at = UInt64(fields[1]) else { return }
                    let t0 = t0Box.withLock { $0 }
                    state.withLock { s in
                        if s.seen.insert(seq * k + i).inserted {
                            s.samples.append(Sample(atS: Clock.ms(from: t0, to: at) / 1000, ms: Clock.ms(from: at, to: ns)))
                        } else {
                            s.duplicates += 1
                        }
                    }
                },
                onClose: { end in
                    state.withLock { s in
                        if end.error != nil { s.closedEarly += 1 }
                        if end.status == 0 { s.failed[0, default: 0] += 1 }
                    }
                })
            streams.openStream(HTTPRequest(method: "GET", url: "\(base)/sub/\(channel(i))", token: nil), handlers: handlers)
        }
        defer { streams.closeStreams() }
        let openDeadline = Clock.nowNs() + 60_000_000_000
        while true {
            let (opened, failed) = state.withLock { ($0.opened, $0.failed) }
            if !failed.isEmpty { throw LoadTestError("nchan baseline: streams failed to open: \(failed)") }
            if opened == k { break }
            if Clock.nowNs() > openDeadline {
                throw LoadTestError("nchan baseline: only \(opened) of \(k) streams opened within 60 s")
            }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        // Probes until every subscriber has heard one: then each is surely subscribed.
        let probeDeadline = Clock.nowNs() + 60_000_000_000
        while true {
            let probed = state.withLock { $0.probed }
            if probed.count == k { break }
            if Clock.nowNs() > probeDeadline {
                throw LoadTestError("nchan baseline: only \(probed.count) of \(k) subscribers heard a probe within 60 s")
            }
            let channels = fanout ? ["all"] : (0..<k).filter { !probed.contains($0) }.map(channel)
            await withTaskGroup(of: Void.self) { group in
                for c in channels {
                    group.addTask {
                        _ = await engine.send(
                            HTTPRequest(method: "POST", url: "\(base)/pub/\(c)", token: nil, body: Array("probe".utf8)))
                    }
                }
            }
            try await Task.sleep(nanoseconds: 200_000_000)
        }

        // The schedule: the libzmq baseline's seeded channel sequence.
        var rng = SeededRandom(seed: seed &+ 0x62_6173_65)
        let interval = 1e9 / max(rate, 0.001)
        let t0 = Clock.nowNs() + 100_000_000
        t0Box.withLock { $0 = t0 }
        for i in 0..<total {
            let at = t0 + UInt64(Double(i) * interval)
            let target = fanout ? "all" : channel(Int(rng.next() % UInt64(k)))
            var body = Array("\(i) \(at) ".utf8)
            if body.count < payload { body.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: payload - body.count)) }
            engine.send(HTTPRequest(method: "POST", url: "\(base)/pub/\(target)", token: nil, body: body, notBeforeNs: at)) { r in
                state.withLock { s in
                    s.published += 1
                    if !(200..<300).contains(r.status) { s.publishErrors += 1 }
                }
            }
        }
        // Until everything arrived, or 10 s after the last scheduled publish (as the libzmq baseline).
        let deadline = t0 + UInt64((Double(total) * interval + 10e9))
        while Clock.nowNs() < deadline {
            let (received, published) = state.withLock { ($0.seen.count, $0.published) }
            if received >= expected && published == total { break }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        let s = state.withLock { $0 }
        var b = BaselineReport()
        b.subscribers = k
        b.messages = total
        b.expected = expected
        b.received = s.seen.count
        b.lost = expected - s.seen.count
        b.payloadBytes = payload
        b.ratePerSecond = rate
        b.latencyMs = LatencySummary(s.samples.map(\.ms))
        b.timeline = TimelinePoint.timeline(s.samples)
        b.server = server.description
        b.publishErrors = s.publishErrors + (total - s.published)
        b.duplicates = s.duplicates
        return (b, s.samples)
    }
}
