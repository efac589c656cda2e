import CZMQ
import Foundation
import Harness
import Synchronization
import TestSupport
import Testing

@testable import BackendKit
@testable import Messages
@testable import ServiceKit
@testable import Storage
@testable import Support
@testable import Transport
@testable import Wire

/// The service host and the RPC client, in process, over real TCP loopback sockets.
struct HostAndClientTests {
    let logger = Logger(service: "test", minimum: .error)

    @Test func echoAndTypedErrors() async throws {
        let context = ZMQContext()
        let host = try makeTestHost(context: context)
        defer { host.stop() }
        let client = try RPCClient(
            service: "test", endpoint: host.boundEndpoints.withLock { $0.rpc }, context: context, logger: logger)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        let reply = try await client.call(TestRPC.Echo.self, .init(text: "hello"), timeoutMs: 10_000)
        #expect(reply.text == "hello")
        await #expect(throws: ServiceError.conflict("already_there", "it exists")) {
            try await client.call(TestRPC.Fail.self, Empty(), timeoutMs: 10_000)
        }
    }

    @Test func binaryFramesTravelBesideTheEnvelopeAndOneFrameMessagesStayOneFrame() async throws {
        let context = ZMQContext()
        let host = ServiceHost(
            name: "bin", context: context, rpcBind: "tcp://127.0.0.1:*", eventsBind: "tcp://127.0.0.1:*", database: nil,
            logger: logger)
        host.onBinary(TestRPC.Echo.self) { request, bytes, _ in
            (.init(text: "\(request.text):\(bytes?.count ?? -1)"), bytes.map { Array($0.reversed()) })
        }
        try host.start()
        defer { host.stop() }
        let endpoint = host.boundEndpoints.withLock { $0.rpc }
        let client = try RPCClient(service: "bin", endpoint: endpoint, context: context, logger: logger)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        let big = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let (reply, back) = try await client.call(TestRPC.Echo.self, .init(text: "up"), binary: big, timeoutMs: 10_000)
        #expect(reply.text == "up:3000000" && back == Array(big.reversed()))
        let (emptyReply, emptyBack) = try await client.call(TestRPC.Echo.self, .init(text: "e"), binary: [], timeoutMs: 10_000)
        #expect(emptyReply.text == "e:0" && emptyBack == [])
        let plain = try await client.call(TestRPC.Echo.self, .init(text: "plain"), timeoutMs: 10_000)
        #expect(plain.text == "plain:-1")
        // On the wire, a request without bytes is [delimiter, envelope] and so is its reply.
        let frames = try await Task.detached { () -> [[UInt8]]? in
            let dealer = try ZMQSocket(context, .dealer)
            try dealer.set(ZMQ_RCVTIMEO, 5_000)
            try dealer.connect(endpoint)
            let envelope = #"{"v":1,"id":"r1","type":"test.echo","deadline":99999999999999,"trace":"t","body":{"text":"raw"}}"#
            try dealer.send([[], Array(envelope.utf8)])
            return try dealer.receive()
        }.value
        #expect(frames?.count == 2 && frames?.first == [])
    }

    @Test func unknownTypeAndMalformedBodyGetErrorReplies() async throws {
        let context = ZMQContext()
        let host = try makeTestHost(context: context)
        defer { host.stop() }
        let client = try RPCClient(
            service: "test", endpoint: host.boundEndpoints.withLock { $0.rpc }, context: context, logger: logger)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        do {
            _ = try await client.call(Auth.Login.self, .init(login: "a", password: "b"), timeoutMs: 10_000)
            Issue.record("expected unknown_type")
        } catch let e as ServiceError {
            #expect(e.code == "unknown_type" && e.status == 400)
        }
        // The echo handler gets a body of the wrong shape.
        do {
            _ = try await client.call(WrongShapeEcho.self, .init(other: 1), timeoutMs: 10_000)
            Issue.record("expected malformed_body")
        } catch let e as ServiceError {
            #expect(e.code == "malformed_body")
        }
    }

    @Test func malformedFramesFromARawSocketAreAnsweredNotIgnored() async throws {
        let context = ZMQContext()
        let host = try makeTestHost(context: context)
        defer { host.stop() }
        let endpoint = host.boundEndpoints.withLock { $0.rpc }
        let replies = try await Task.detached { () -> [[[UInt8]]] in
            let dealer = try ZMQSocket(context, .dealer)
            try dealer.set(ZMQ_RCVTIMEO, 5_000)
            try dealer.connect(endpoint)
            var out: [[[UInt8]]] = []
            for payload in [
                "not json", #"{"v":1}"#, #"{"v":99,"id":"x","type":"test.echo","deadline":99999999999999,"trace":"t","body":{}}"#,
            ] {
                try dealer.send([[], Array(payload.utf8)])
                if let r = try dealer.receive() { out.append(r) }
            }
            // And a message with no delimiter and several frames: still answered.
            try dealer.send([Array("junk".utf8), Array("more".utf8)])
            if let r = try dealer.receive() { out.append(r) }
            return out
        }.value
        #expect(replies.count == 4)
        let codes = replies.compactMap { try? WireJSON.decode(ReplyHeader.self, from: $0.last ?? []).error?.code }
        #expect(codes == ["malformed_envelope", "malformed_envelope", "unsupported_version", "malformed_envelope"])
        // The host still serves well-formed requests afterwards.
        let client = try RPCClient(service: "test", endpoint: endpoint, context: context, logger: logger)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        #expect(try await client.call(TestRPC.Echo.self, .init(text: "still here"), timeoutMs: 10_000).text == "still here")
    }

    @Test func aSlowHandlerDoesNotDelayAFastOne() async throws {
        let context = ZMQContext()
        let host = try makeTestHost(context: context)
        defer { host.stop() }
        let client = try RPCClient(
            service: "test", endpoint: host.boundEndpoints.withLock { $0.rpc }, context: context, logger: logger)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        // The slow handler waits on a gate the test opens only after the fast reply arrived.
        let gate = "slow-\(RandomID.make())"
        let order = OrderLog()
        async let slow: Void = {
            _ = try await client.call(TestRPC.Gated.self, .init(gate: gate), timeoutMs: 60_000)
            await order.append("slow")
        }()
        _ = try await client.call(TestRPC.Echo.self, .init(text: "fast"), timeoutMs: 60_000)
        await order.append("fast")
        Gates.shared.open(gate)
        _ = try await slow
        #expect(await order.items == ["fast", "slow"])
    }

    @Test func thousandsInFlightFromOneClient() async throws {
        let context = ZMQContext()
        let host = try makeTestHost(context: context)
        defer { host.stop() }
        let client = try RPCClient(
            service: "test", endpoint: host.boundEndpoints.withLock { $0.rpc }, context: context, logger: logger)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        let n = 3_000
        let replies = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<n {
                group.addTask { try await client.call(TestRPC.Echo.self, .init(text: "\(i)"), timeoutMs: 30_000).text }
            }
            var all = Set<String>()
            for try await r in group { all.insert(r) }
            return all
        }
        #expect(replies.count == n)
    }

    @Test func downIsUnavailableAndSlowIsTimeout() async throws {
        let context = ZMQContext()
        // Nothing listens here: a free port taken from the OS and released.
        let probe = try ZMQSocket(context, .router)
        let endpoint = try probe.bind("tcp://127.0.0.1:*")
        probe.close()
        let down = try RPCClient(service: "nobody", endpoint: endpoint, context: context, logger: logger)
        defer { down.shutdown() }
        do {
            _ = try await down.call(TestRPC.Echo.self, .init(text: "x"), timeoutMs: 5_000)
            Issue.record("expected unavailable")
        } catch let e as ServiceError {
            #expect(e.code == "service_unavailable" && e.status == 503)
        }
        let host = try makeTestHost(context: context)
        defer { host.stop() }
        let slow = try RPCClient(
            service: "test", endpoint: host.boundEndpoints.withLock { $0.rpc }, context: context, logger: logger)
        defer { slow.shutdown() }
        try await waitUntilConnected(slow)
        do {
            _ = try await slow.call(TestRPC.Gated.self, .init(gate: "never-\(RandomID.make())"), timeoutMs: 200)
            Issue.record("expected timeout")
        } catch let e as ServiceError {
            // The client's deadline, or the host's own check if the request reached it late: 504 either way.
            #expect(e.status == 504 && ["service_timeout", "deadline_exceeded"].contains(e.code))
        }
        // A lost reply wedges nothing: the next call works.
        #expect(try await slow.call(TestRPC.Echo.self, .init(text: "after"), timeoutMs: 10_000).text == "after")
    }

    @Test func clientSurvivesTheServiceRestarting() async throws {
        let context = ZMQContext()
        var host = try makeTestHost(context: context)
        let endpoint = host.boundEndpoints.withLock { $0.rpc }
        let client = try RPCClient(service: "test", endpoint: endpoint, context: context, logger: logger)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        #expect(try await client.call(TestRPC.Echo.self, .init(text: "one"), timeoutMs: 10_000).text == "one")
        host.stop()
        await host.run()  // returns once the socket thread has closed its sockets
        do {
            _ = try await client.call(TestRPC.Echo.self, .init(text: "while down"), timeoutMs: 2_000)
            Issue.record("expected unavailable while down")
        } catch let e as ServiceError {
            #expect(e.status == 503)
        }
        host = try makeTestHost(context: context, rpc: endpoint)
        defer { host.stop() }
        try await waitUntilConnected(client)
        #expect(try await client.call(TestRPC.Echo.self, .init(text: "two"), timeoutMs: 10_000).text == "two")
    }

    @Test func stopAnswersInFlightRequestsInsteadOfLeavingThemHanging() async throws {
        let context = ZMQContext()
        let host = try makeTestHost(context: context)
        let client = try RPCClient(
            service: "test", endpoint: host.boundEndpoints.withLock { $0.rpc }, context: context, logger: logger)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        // A handler that never finishes: only the stop can answer it before the 60 s deadline.
        async let pending = client.call(TestRPC.Gated.self, .init(gate: "never-\(RandomID.make())"), timeoutMs: 60_000)
        // Wait until the host has the request in flight.
        try await eventually("the gated request in flight", intervalMs: 5) {
            (host.counterSnapshot()["requests.test.gated"] ?? 0) >= 1
        }
        host.stop()
        await host.run()
        do {
            _ = try await pending
            Issue.record("expected shutting_down")
        } catch let e as ServiceError {
            // The `shutting_down` reply, or the disconnect seen first: failed at once, either way 503.
            #expect(e.status == 503 && ["shutting_down", "service_unavailable"].contains(e.code))
        }
    }

    /// A request that reached its peer and lost it (the peer went away without answering) is
    /// sent again only when its type is idempotent or the call is marked so.
    @Test func aCallMarkedIdempotentIsSentAgainAfterItsPeerWentAway() async throws {
        let context = ZMQContext()
        for marked in [false, true] {
            // A bare ROUTER takes the request and closes without answering; a host then takes its port.
            let router = try ZMQSocket(context, .router)
            try SocketDefaults.apply(router)
            let endpoint = try router.bind("tcp://127.0.0.1:*")
            let client = try RPCClient(
                service: "test", endpoint: endpoint, context: context, logger: logger, unsentRetryBudgetMs: 20_000)
            defer { client.shutdown() }
            async let reply = client.call(
                NonIdempotentEcho.self, .init(text: "once"), timeoutMs: 20_000, idempotent: marked ? true : nil)
            try await eventually("the bare ROUTER received the request", intervalMs: 5) {
                try router.receive(dontWait: true) != nil
            }
            router.close()
            // libzmq releases the port on its I/O thread, a moment after the close.
            let host = try await eventuallyValue("the ROUTER's port released", intervalMs: 10) {
                do { return try makeTestHost(context: context, rpc: endpoint) } catch is ZMQError { return nil }
            }
            defer { host.stop() }
            do {
                let answer = try await reply
                #expect(marked && answer.text == "once")
            } catch let e as ServiceError {
                #expect(!marked && e.code == "service_unavailable" && e.status == 503)
            }
        }
    }

    @Test func pingReportsCounters() async throws {
        let context = ZMQContext()
        let host = try makeTestHost(context: context)
        defer { host.stop() }
        let client = try RPCClient(
            service: "test", endpoint: host.boundEndpoints.withLock { $0.rpc }, context: context, logger: logger)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        _ = try await client.call(TestRPC.Echo.self, .init(text: "x"), timeoutMs: 10_000)
        let ping = try await client.call(Ops.Ping.self, Empty(), timeoutMs: 10_000)
        #expect(ping.service == "test")
        #expect(ping.counters["requests.test.echo"] == 1)
    }
}

/// `test.echo` as a type that is not idempotent (retried only when a call is marked so).
enum NonIdempotentEcho: RPC {
    static let type = "test.echo"
    static let isIdempotent = false
    typealias Request = TestRPC.Echo.Request
    typealias Reply = TestRPC.Echo.Reply
}

enum WrongShapeEcho: RPC {
    static let type = "test.echo"
    static let isIdempotent = true
    struct Request: Codable, Sendable { var other: Int }
    typealias Reply = TestRPC.Echo.Reply
}

actor OrderLog {
    var items: [String] = []
    func append(_ s: String) { items.append(s) }
}

/// Retries pings until the client has a live connection (deadline-bounded, no sleeping).
func waitUntilConnected(_ client: RPCClient) async throws {
    try await waitUntilReachable(client, timeoutMs: 30_000)
}

/// Where a service's handlers run (`LoopExecutor`): on the host's socket thread, also after an
/// await that resumed on another thread and in their child tasks, so a request costs no handoff
/// to Swift's global pool and back.
struct HostExecutorTests {
    typealias HostThreadCheck = @Sendable () -> Bool

    @Test func handlersRunOnTheSocketThreadAcrossAwaitsAndInChildTasks() async throws {
        let context = ZMQContext()
        let host = ServiceHost(
            name: "onloop", context: context, rpcBind: "tcp://127.0.0.1:*", eventsBind: "tcp://127.0.0.1:*",
            database: nil, logger: Logger(service: "test", minimum: .error))
        let onLoop = Locked<HostThreadCheck?>(nil)
        host.on(TestRPC.Echo.self) { _, _ in
            let check = onLoop.withLock { $0! }
            let first = check()
            // Resumed from a Dispatch thread, as a database read resumes.
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async { c.resume() }
            }
            let resumed = check()
            async let child = check()
            return .init(text: ["\(first)", "\(resumed)", "\(await child)"].joined(separator: "|"))
        }
        onLoop.withLock { $0 = { host.isSocketThread } }
        try host.start()
        defer { host.stop() }
        let client = try RPCClient(
            service: "onloop", endpoint: host.boundEndpoints.withLock { $0.rpc }, context: context,
            logger: Logger(service: "test", minimum: .error))
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        let reply = try await client.call(TestRPC.Echo.self, .init(text: ""), timeoutMs: 10_000)
        #expect(reply.text == "true|true|true")
        #expect(!host.isSocketThread)
    }

    @Test func aJobEnqueuedFromAnotherThreadWakesTheLoopAndRunsOnIt() async throws {
        let loop = TestLoop()
        let executor = loop.executor
        loop.start()
        defer { loop.stopSoon() }
        let onLoop = await Task(executorPreference: executor) { () -> [Bool] in
            let first = executor.isLoopThread
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async { c.resume() }
            }
            return [first, executor.isLoopThread]
        }.value
        #expect(onLoop == [true, true])
        #expect(!executor.isLoopThread)
    }
}

/// A task whose loop stopped while it waited still finishes (on Dispatch's queue): it must not
/// wait forever holding what it captured (a host, its ZeroMQ context).
struct LoopExecutorStopTests {
    @Test func aTaskResumedAfterTheLoopStoppedStillFinishes() async throws {
        let loop = TestLoop()
        let executor = loop.executor
        let held = Locked<CheckedContinuation<Void, Never>?>(nil)
        // The task waits on `held`, set once it runs on the loop.
        let task = Task(executorPreference: executor) { () -> Bool in
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in held.withLock { $0 = c } }
            return executor.isLoopThread
        }
        loop.start()
        while held.withLock({ $0 == nil }) { await Task.yield() }
        await loop.stop()
        held.withLock { $0!.resume() }
        #expect(await task.value == false)  // finished, off the stopped loop
    }
}

/// Where a read runs: on SQLite, a read made on a loop thread runs there (no hop to a reader
/// queue and back); on PostgreSQL, and off loop threads, on the reader queues. Both engines.
struct LoopReadTests {
    @Test func aReadOnALoopThreadRunsThereOnSQLiteOnly() async throws {
        let database = try Database(
            location: try TestStorage.location(NSTemporaryDirectory(), "loopread-\(RandomID.make())"), producer: nil,
            migrations: [Migration("t", "CREATE TABLE t(v INTEGER)")])
        let loop = TestLoop()
        let executor = loop.executor
        loop.start()
        defer { loop.stopSoon() }
        let onLoop = await Task(executorPreference: executor) { () -> Bool? in
            try? await database.read { c in
                _ = try c.scalar("SELECT COUNT(*) FROM t")
                return LoopThread.isCurrent
            }
        }.value
        #expect(onLoop == (database.engine == .sqlite))
        let offLoop = try await database.read { _ in LoopThread.isCurrent }
        #expect(offLoop == false)
    }
}

/// A minimal event loop for tests: one thread that polls a wakeup and runs a `LoopExecutor`'s
/// jobs until stopped, then stops the executor, as a host's socket thread does.
final class TestLoop: Sendable {
    let wakeup = Wakeup()
    let executor: LoopExecutor
    private let stopping = Atomic<Bool>(false)
    /// Whether the thread has ended, and who waits for it.
    private let end = Locked<(ended: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    init() { executor = LoopExecutor(wakeup: wakeup) }

    func start() {
        Thread { [self] in
            executor.bind()
            var poll = pollfd(fd: wakeup.fd, events: Int16(POLLIN), revents: 0)
            while !stopping.load(ordering: .acquiring) {
                _ = Glibc.poll(&poll, 1, executor.hasPending ? 0 : 1_000)
                wakeup.drain()
                executor.runPending()
            }
            executor.stop()
            let waiter = end.withLock { e -> CheckedContinuation<Void, Never>? in
                e.ended = true
                return e.waiter
            }
            waiter?.resume()
        }.start()
    }

    /// Asks the loop to stop, without waiting.
    func stopSoon() {
        stopping.store(true, ordering: .releasing)
        wakeup.signal()
    }

    /// Stops the loop and returns once its thread has ended.
    func stop() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ended = end.withLock { e -> Bool in
                if !e.ended { e.waiter = c }
                return e.ended
            }
            if ended { c.resume() }
            stopSoon()
        }
    }
}
