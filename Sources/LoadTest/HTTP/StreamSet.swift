import Foundation
import Shared

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
final class StreamSet: Sendable {
    private struct State {
        var opened = 0
        var failed: [Int: Int] = [:]
        var closedEarly = 0
        var events: [ReceivedEvent] = []
        var unparsable = 0
    }
    private let state = Locked(State())
    let users: [Int]

    /// Opens a stream for each of `users` (population indices) and waits until all have
    /// answered (headers received), up to `timeout` seconds.
    /// - Throws: `LoadTestError` when some failed or did not open in time.
    init(api: GatewayAPI, population: Population, users: [Int], timeout: Double = 60) async throws {
        self.users = users
        let state = self.state
        for u in users {
            let handlers = StreamHandlers(
                onOpen: { status in
                    state.withLock { s in
                        if status == 200 { s.opened += 1 } else { s.failed[status, default: 0] += 1 }
                    }
                },
                onEvent: { event, ns in
                    guard event.event == nil || event.event == "notification" else { return }
                    let json =
                        (try? JSONSerialization.jsonObject(with: Data(event.data.utf8))) as? [String: Any]
                    let key = json.flatMap { NotificationKey(json: $0) }
                    state.withLock { s in
                        if let key {
                            s.events.append(
                                ReceivedEvent(user: u, key: key, ns: ns, bytes: event.data.utf8.count))
                        } else {
                            s.unparsable += 1
                        }
                    }
                },
                onClose: { status, error in
                    if error != nil || status == 200 {
                        state.withLock { $0.closedEarly += error == nil ? 0 : 1 }
                    }
                    if status == 0 { state.withLock { $0.failed[0, default: 0] += 1 } }
                })
            api.streams.openStream(
                HTTPRequest(
                    method: "GET", url: api.baseURL + "/v1/notifications/stream",
                    token: population.users[u].token), handlers: handlers)
        }
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

    var eventCount: Int { state.withLock { $0.events.count } }
    var events: [ReceivedEvent] { state.withLock { $0.events } }
    /// Streams that ended with an error while the run was going on.
    var closedEarly: Int { state.withLock { $0.closedEarly } }
    var unparsable: Int { state.withLock { $0.unparsable } }
}
