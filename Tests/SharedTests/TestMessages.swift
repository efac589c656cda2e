import BackendKit
import Foundation
import Messages
import Storage
import Support
import Transport
import Wire

/// Message types used only by the foundation tests.
enum TestRPC {
    enum Echo: RPC {
        static let type = "test.echo"
        static let isIdempotent = true
        struct Request: Codable, Sendable, Equatable {
            var text: String
            var delayMs: Int = 0
        }
        struct Reply: Codable, Sendable, Equatable { var text: String }
    }

    enum Fail: RPC {
        static let type = "test.fail"
        static let isIdempotent = false
        typealias Request = Empty
        typealias Reply = Empty
    }

    enum Emit: RPC {
        static let type = "test.emit"
        static let isIdempotent = false
        struct Request: Codable, Sendable { var count: Int }
        typealias Reply = Empty
    }

    /// Holds the database writer for `ms` milliseconds (to build a queue behind it).
    enum HoldWriter: RPC {
        static let type = "test.hold_writer"
        static let isIdempotent = false
        struct Request: Codable, Sendable { var ms: Int }
        typealias Reply = Empty
    }

    /// Answers once the test opens the gate named in the request (never, if it does not).
    enum Gated: RPC {
        static let type = "test.gated"
        static let isIdempotent = false
        struct Request: Codable, Sendable { var gate: String }
        typealias Reply = Empty
    }

    struct Happened: Event {
        static let type = "test.happened"
        var n: Int
    }

    /// An event as large as a bulk import's (`pad` makes it so).
    struct Bulky: Event {
        static let type = "test.bulky"
        var n: Int
        var pad: String
    }

    /// Published under `Happened`'s type with a body that does not decode as one.
    struct Mistyped: Event {
        static let type = "test.happened"
        var n: String
    }
}

/// Named gates that in-process test handlers wait on, opened by the test: the condition a test
/// controls instead of a delay it hopes is long enough.
final class Gates: Sendable {
    static let shared = Gates()
    private let state = Locked<(open: Set<String>, waiters: [String: [CheckedContinuation<Void, Never>]])>(([], [:]))

    func wait(_ name: String) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let isOpen = state.withLock { s -> Bool in
                if s.open.contains(name) { return true }
                s.waiters[name, default: []].append(c)
                return false
            }
            if isOpen { c.resume() }
        }
    }

    func open(_ name: String) {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.open.insert(name)
            defer { s.waiters[name] = nil }
            return s.waiters[name] ?? []
        }
        for w in waiters { w.resume() }
    }
}

/// Starts an in-process host with the test handlers on ephemeral loopback ports.
func makeTestHost(context: ZMQContext, database: Database? = nil, rpc: String = "tcp://127.0.0.1:*") throws -> ServiceHost {
    let host = ServiceHost(
        name: "test", context: context, rpcBind: rpc, eventsBind: "tcp://127.0.0.1:*", database: database,
        logger: Logger(service: "test", minimum: .error))
    host.on(TestRPC.Echo.self) { request, _ in
        if request.delayMs > 0 { try await Task.sleep(for: .milliseconds(request.delayMs)) }
        return .init(text: request.text)
    }
    host.on(TestRPC.Fail.self) { _, _ in throw ServiceError.conflict("already_there", "it exists") }
    host.on(TestRPC.Gated.self) { request, _ in
        await Gates.shared.wait(request.gate)
        return Empty()
    }
    if let database {
        host.on(TestRPC.Emit.self) { request, _ in
            try await database.write { tx in
                for i in 0..<request.count { try tx.emit(TestRPC.Happened(n: i)) }
            }
            return Empty()
        }
        host.on(TestRPC.HoldWriter.self) { request, _ in
            try await database.write { _ in Thread.sleep(forTimeInterval: Double(request.ms) / 1_000) }
            return Empty()
        }
    }
    try host.start()
    return host
}
