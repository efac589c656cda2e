import Foundation
import Messages
import Support

/// One notification received over a stream.
struct ReceivedEvent: Sendable {
    /// Index of the recipient user in the population.
    var user: Int
    var key: NotificationKey
    /// Monotonic ns of arrival.
    var ns: UInt64
    /// Bytes of the `data:` payload.
    var bytes: Int
}

/// K notification streams (`GET /v1/notifications/stream`), one per user, recording every
/// `notification` event they deliver.
///
/// A stream that ends while the run goes on (its gateway died, the load balancer restarted, the
/// gateway closed a reader that fell behind) is opened again as an EventSource would be (WHATWG
/// HTML §9.2: reconnect after a delay, send `Last-Event-ID`): after 100 ms doubling to 2 s
/// while attempts fail (each delay drawn from its upper half, so that thousands of streams cut
/// at once do not come back at once), with `Last-Event-ID` = the last `id:` the stream saw, or,
/// before its first event, the user's newest notification when the set opened. So the tool
/// itself neither misses nor repeats a notification across a reconnection: the lost and
/// duplicate counts are the system's. `reconnects` counts the streams opened again.
final class StreamSet: Sendable {
    private struct State {
        var opened = 0
        var failed: [Int: Int] = [:]
        var closedEarly = 0
        var reconnects = 0
        var reconnectFailures = 0
        var events: [ReceivedEvent] = []
        var unparsable = 0
        /// Per stream: the id to resume after (`Last-Event-ID`).
        var lastEventId: [String]
        /// Per stream: whether it has ever opened (200); until then a failure is an opening failure.
        var everOpened: [Bool]
        /// Per stream: whether the current attempt opened (200).
        var attemptOpened: [Bool]
        /// Per stream: the delay before its next reconnection attempt, ns.
        var backoffNs: [UInt64]
        /// Set by `close()`: no more reconnections.
        var closing = false
    }
    private let state: Locked<State>
    private let api: GatewayAPI
    private let tokens: [String]
    let users: [Int]

    /// The first and the longest delay before a reconnection attempt, ns.
    static let firstBackoffNs: UInt64 = 100_000_000
    static let maxBackoffNs: UInt64 = 2_000_000_000

    /// Opens a stream for each of `users` (population indices) and waits until all have
    /// answered (headers received), up to `timeout` seconds.
    /// - Parameter resumeAfter: per user, where a stream that ends before its first event
    ///   resumes (`StreamSet.resumePoints`); nil: after the newest notification now, read here.
    /// - Throws: `LoadTestError` when some failed or did not open in time, or a resume point
    ///   could not be read.
    init(
        api: GatewayAPI, population: Population, users: [Int], resumeAfter: [String]? = nil, timeout: Double = 60
    ) async throws {
        let points: [String]
        if let resumeAfter {
            points = resumeAfter
        } else {
            points = try await Self.resumePoints(api: api, population: population, users: users)
        }
        precondition(points.count == users.count, "one resume point per stream")
        self.users = users
        self.api = api
        tokens = users.map { population.users[$0].token }
        state = Locked(
            State(
                lastEventId: points, everOpened: Array(repeating: false, count: users.count),
                attemptOpened: Array(repeating: false, count: users.count),
                backoffNs: Array(repeating: Self.firstBackoffNs, count: users.count)))
        for i in users.indices { open(i, resuming: false) }
        let deadline = Clock.nowNs() + UInt64(timeout * 1e9)
        while true {
            let (opened, failed) = state.withLock { ($0.opened, $0.failed.values.reduce(0, +)) }
            if opened + failed >= users.count {
                if failed > 0 {
                    throw LoadTestError(
                        "\(failed) of \(users.count) streams failed to open: \(state.withLock { $0.failed })")
                }
                return
            }
            if Clock.nowNs() > deadline {
                throw LoadTestError("only \(opened) of \(users.count) streams opened within \(timeout) s")
            }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
    }

    /// Each user's newest notification seq (`GET /v1/notifications?limit=1`; "0" when the list
    /// is empty): where a stream that ends before its first event resumes.
    /// - Throws: `LoadTestError` when a list cannot be read.
    static func resumePoints(api: GatewayAPI, population: Population, users: [Int], concurrency: Int = 64)
        async throws -> [String]
    {
        let points = Locked([String?](repeating: nil, count: users.count))
        let failures = Locked([String]())
        await forEachConcurrently(users.count, limit: concurrency) { i in
            let r = await api.call("GET", "/v1/notifications?limit=1", token: population.users[users[i]].token)
            guard r.status == 200, let items = r.object["items"] as? [[String: Any]] else {
                failures.withLock { $0.append("HTTP \(r.status) \(r.error ?? "")") }
                return
            }
            let seq = (items.first?["seq"] as? NSNumber)?.int64Value ?? 0
            points.withLock { $0[i] = String(seq) }
        }
        if let failure = failures.withLock({ $0.first }) {
            throw LoadTestError("reading where the streams start (GET /v1/notifications?limit=1): \(failure)")
        }
        return points.withLock { $0.map { $0 ?? "0" } }
    }

    /// Opens stream `i`: the first time as a plain stream (live events), afterwards with
    /// `Last-Event-ID`. Called with the state unlocked.
    private func open(_ i: Int, resuming: Bool) {
        let u = users[i]
        let state = self.state
        let handlers = StreamHandlers(
            onOpen: { status in
                state.withLock { s in
                    if status == 200 { s.attemptOpened[i] = true }
                    if !s.everOpened[i] {
                        if status == 200 {
                            s.everOpened[i] = true
                            s.opened += 1
                        } else {
                            s.failed[status, default: 0] += 1
                        }
                    } else if status == 200 {
                        s.reconnects += 1
                        s.backoffNs[i] = Self.firstBackoffNs
                    }
                }
            },
            onEvent: { event, ns in
                if let id = event.id, !id.isEmpty { state.withLock { $0.lastEventId[i] = id } }
                guard event.event == nil || event.event == "notification" else { return }
                let json =
                    (try? JSONSerialization.jsonObject(with: Data(event.data.utf8))) as? [String: Any]
                let key = json.flatMap { NotificationKey(json: $0) }
                state.withLock { s in
                    if let key {
                        s.events.append(ReceivedEvent(user: u, key: key, ns: ns, bytes: event.data.utf8.count))
                    } else {
                        s.unparsable += 1
                    }
                }
            },
            onClose: { [weak self] end in
                guard !end.closedByUs, let self else { return }
                let delay = state.withLock { s -> UInt64? in
                    let opened = s.attemptOpened[i]
                    s.attemptOpened[i] = false
                    guard s.everOpened[i] else {
                        // Never opened: an opening failure (onOpen counted an HTTP status).
                        if end.status == 0 { s.failed[0, default: 0] += 1 }
                        return nil
                    }
                    if opened { s.closedEarly += 1 } else { s.reconnectFailures += 1 }
                    guard !s.closing else { return nil }
                    let delay = s.backoffNs[i]
                    s.backoffNs[i] = min(delay * 2, Self.maxBackoffNs)
                    return delay / 2 + UInt64.random(in: 0...(delay / 2))
                }
                guard let delay else { return }
                Task {
                    try? await Task.sleep(nanoseconds: delay)
                    self.open(i, resuming: true)
                }
            })
        // Under the lock, so that `close()` either comes first (and nothing opens) or sees this
        // stream's command queued before its own `closeStreams`.
        state.withLock { s in
            guard !s.closing else { return }
            var request = HTTPRequest(method: "GET", url: api.baseURL + "/v1/notifications/stream", token: tokens[i])
            if resuming { request.headers = ["Last-Event-ID: \(s.lastEventId[i])"] }
            api.streams.openStream(request, handlers: handlers)
        }
    }

    /// Closes every stream, for good (no reconnection afterwards).
    func close() {
        state.withLock { s in
            s.closing = true
            api.streams.closeStreams()
        }
    }

    var eventCount: Int { state.withLock { $0.events.count } }
    var events: [ReceivedEvent] { state.withLock { $0.events } }
    /// Streams that ended while the run was going on (each was then opened again).
    var closedEarly: Int { state.withLock { $0.closedEarly } }
    /// Streams opened again (with `Last-Event-ID`) after one ended.
    var reconnects: Int { state.withLock { $0.reconnects } }
    /// Reconnection attempts that failed (no gateway reachable, 503, 429…) and were tried again.
    var reconnectFailures: Int { state.withLock { $0.reconnectFailures } }
    var unparsable: Int { state.withLock { $0.unparsable } }
}
