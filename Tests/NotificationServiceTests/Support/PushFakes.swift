import APNs
import Foundation
import Support
import Wire

@testable import NotificationService

/// A `PushTransport` that records every message and answers each with the outcome scripted for
/// its token (queued outcomes first, then `.sent`).
final class RecordingTransport: PushTransport {
    private let state = Locked<(sent: [PushMessage], script: [String: [PushOutcome]])>(([], [:]))

    /// Every message handed to `send`, in order, whatever its outcome.
    var messages: [PushMessage] { state.withLock { $0.sent } }

    /// The next sends to `token` get `outcomes`, one each, in order.
    func script(_ token: String, _ outcomes: [PushOutcome]) {
        state.withLock { $0.script[token, default: []] += outcomes }
    }

    func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        state.withLock { s in
            s.sent += messages
            return messages.map { m in
                guard var queued = s.script[m.deviceToken], !queued.isEmpty else { return .sent(apnsID: nil) }
                let outcome = queued.removeFirst()
                s.script[m.deviceToken] = queued
                return outcome
            }
        }
    }
}

/// A clock the test moves (Unix ms), for `PushQueue`.
final class TestClock: Sendable {
    private let now = Locked<Int64>(Timestamp.nowMs())

    func read() -> Int64 { now.withLock { $0 } }

    func advance(ms: Int64) { now.withLock { $0 += ms } }

    /// A queue on this clock.
    func queue(environments: Set<String> = ["sandbox", "production"]) -> PushQueue {
        PushQueue(clock: { [self] in read() }, environments: environments)
    }
}

/// A decoded push payload.
struct DecodedPush: Decodable, Equatable {
    struct APS: Decodable, Equatable {
        struct Alert: Decodable, Equatable { var body: String }
        var alert: Alert
        var badge: Int
        var sound: String
        var threadID: String
        enum CodingKeys: String, CodingKey {
            case alert, badge, sound
            case threadID = "thread-id"
        }
    }
    var aps: APS
    var notificationId: String
    var seq: Int64

    init(_ message: PushMessage) throws {
        self = try JSONDecoder().decode(DecodedPush.self, from: Data(message.payload))
    }
}

/// A token for tests: `n` as 64 hex digits.
func testToken(_ n: Int) -> String {
    String(repeating: "0", count: 64 - String(n, radix: 16).count) + String(n, radix: 16)
}

/// A `PushTransport` whose sends wait until the test releases them (each answered `.sent`), and
/// which records how many were waiting at once.
final class HeldTransport: PushTransport {
    private let state = Locked<(held: [CheckedContinuation<Void, Never>], calls: Int, mostAtOnce: Int, open: Bool)>(
        ([], 0, 0, false))

    /// `send` calls so far.
    var calls: Int { state.withLock { $0.calls } }
    /// The most sends outstanding at once.
    var mostAtOnce: Int { state.withLock { $0.mostAtOnce } }

    /// Lets every held send finish, and every later one at once.
    func release() {
        let held = state.withLock { s in
            s.open = true
            defer { s.held = [] }
            return s.held
        }
        for continuation in held { continuation.resume() }
    }

    func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { s -> Bool in
                s.calls += 1
                if s.open { return true }
                s.held.append(continuation)
                s.mostAtOnce = max(s.mostAtOnce, s.held.count)
                return false
            }
            if resumeNow { continuation.resume() }
        }
        return messages.map { _ in .sent(apnsID: nil) }
    }
}
