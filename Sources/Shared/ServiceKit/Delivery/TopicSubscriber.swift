import CZMQ
import Foundation
import Support
import Synchronization
import Transport

/// What a `TopicSubscriber` receives: a message, or the publisher's welcome for a subscription
/// (see `TopicPublisher`).
public enum TopicItem: Sendable {
    case message(TopicMessage)
    /// The subscription to this topic is active at the publisher: everything published on it
    /// from now on arrives; anything earlier must be read from the source of truth.
    case welcome(topic: [UInt8])
}

/// The subscribing side of routed delivery: a ZeroMQ SUB socket whose subscriptions change at
/// run time (`subscribe(_:)` / `unsubscribe(_:)`, from any thread), connected to one or more
/// `TopicPublisher`s.
///
/// The socket thread reads what arrives into an inbox and rings a doorbell; the delivery task
/// hands everything in the inbox to `handle` at once, in arrival order, so items that pile up
/// while one batch is handled are handled together in the next.
public final class TopicSubscriber: Service {
    private let name: String
    private let context: ZMQContext
    private let endpoints: [String]
    private let logger: Logger
    private let security: TransportSecurity
    private let service: String
    private let receiveHighWaterMark: Int32
    private let handle: @Sendable ([TopicItem]) async -> Void
    private enum Change: Sendable {
        case subscribe([UInt8])
        case unsubscribe([UInt8])
    }
    private let changes = Locked<[Change]>([])
    private let inbox = Locked<[TopicItem]>([])
    private let wakeup = Wakeup()
    private let stopped = Atomic<Bool>(false)
    private let stats = Locked<[String: Int64]>([:])

    /// Items the socket thread holds for the delivery task beyond which it stops reading (the
    /// socket's high-water mark then drops, and subscribers repair by sequence numbers).
    static let inboxLimit = 100_000

    /// - Parameters:
    ///   - endpoints: the publishers to connect to.
    ///   - service: the publisher's name (its CURVE public key file, when CURVE is on).
    ///   - handle: called with each batch of received items, one batch at a time.
    public init(
        name: String, context: ZMQContext, endpoints: [String], service: String, logger: Logger,
        security: TransportSecurity = .current, receiveHighWaterMark: Int32 = 200_000,
        handle: @escaping @Sendable ([TopicItem]) async -> Void
    ) {
        self.name = name
        self.context = context
        self.endpoints = endpoints
        self.service = service
        self.logger = logger
        self.security = security
        self.receiveHighWaterMark = receiveHighWaterMark
        self.handle = handle
    }

    /// Subscribes to `topic` (prefix-matched by the publisher). Takes effect asynchronously;
    /// the publisher's welcome tells when.
    public func subscribe(_ topic: [UInt8]) {
        changes.withLock { $0.append(.subscribe(topic)) }
        wakeup.signal()
    }

    /// Drops one subscription to `topic` (libzmq counts them: the topic stays subscribed while
    /// another subscription to it remains).
    public func unsubscribe(_ topic: [UInt8]) {
        changes.withLock { $0.append(.unsubscribe(topic)) }
        wakeup.signal()
    }

    /// `topics.received`, `topics.welcomes`.
    public func counters() -> [String: Int64] { stats.withLock { $0 } }

    /// Runs until cancelled.
    /// - Throws: `ZMQError` when the socket cannot be created or connected.
    public func run() async throws {
        let sub = try ZMQSocket(context, .sub)
        try SocketDefaults.applyStreaming(sub)
        try sub.setHighWaterMarks(send: 100_000, receive: receiveHighWaterMark)
        try security.configureClient(sub, service)
        for endpoint in endpoints { try sub.connect(endpoint) }
        let (doorbell, ring) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let box = SocketBox(sub)
        let thread = Thread { [self] in
            self.loop(box.take(), ring: ring)
        }
        thread.name = name
        thread.start()
        defer { stopped.store(true, ordering: .releasing) }
        await withTaskCancellationHandler {
            for await _ in doorbell {
                if Task.isCancelled { break }
                let items = inbox.withLock { i -> [TopicItem] in
                    defer { i.removeAll(keepingCapacity: true) }
                    return i
                }
                if !items.isEmpty { await handle(items) }
            }
        } onCancel: {
            self.stopped.store(true, ordering: .releasing)
            self.wakeup.signal()
        }
    }

    private func loop(_ sub: ZMQSocket, ring: AsyncStream<Void>.Continuation) {
        let poller = Poller([.socket(sub), .fd(wakeup.fd)])
        var received: Int64 = 0
        var welcomes: Int64 = 0
        do {
            while !stopped.load(ordering: .acquiring) {
                if inbox.withLock({ $0.count }) >= Self.inboxLimit {
                    // The delivery task is far behind: leave messages in the socket for a while.
                    Thread.sleep(forTimeInterval: 0.01)
                    ring.yield()
                    continue
                }
                let ready = try poller.poll(timeoutMs: 500)
                if ready[1] { wakeup.drain() }
                for change in changes.withLock({ c -> [Change] in
                    defer { c.removeAll() }
                    return c
                }) {
                    switch change {
                    case .subscribe(let topic): try sub.set(ZMQ_SUBSCRIBE, bytes: topic)
                    case .unsubscribe(let topic): try sub.set(ZMQ_UNSUBSCRIBE, bytes: topic)
                    }
                }
                guard ready[0] else { continue }
                var items: [TopicItem] = []
                while items.count < 4_096, let frames = try sub.receive(dontWait: true) {
                    switch frames.count {
                    case 1:
                        items.append(.welcome(topic: frames[0]))
                        welcomes += 1
                    case 2:
                        items.append(.message(TopicMessage(topic: frames[0], payload: frames[1])))
                        received += 1
                    default: continue
                    }
                }
                if !items.isEmpty {
                    inbox.withLock { $0 += items }
                    let (r, w) = (received, welcomes)
                    stats.withLock {
                        $0["topics.received"] = r
                        $0["topics.welcomes"] = w
                    }
                    ring.yield()
                }
            }
        } catch ZMQError.contextTerminated {
            // shutting down
        } catch {
            logger.error("topics.loop_failed", metadata: ["error": "\(error)"])
        }
        sub.close()
        ring.finish()
    }
}

/// Moves a socket to the thread that will own it.
private final class SocketBox: @unchecked Sendable {
    // @unchecked: set before the thread starts, taken once by it, never shared.
    private var socket: ZMQSocket?
    init(_ socket: ZMQSocket) { self.socket = socket }
    func take() -> ZMQSocket {
        defer { socket = nil }
        return socket!
    }
}
