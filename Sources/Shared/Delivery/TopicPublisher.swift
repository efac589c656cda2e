import CZMQ
import Foundation
import Synchronization

/// One message on a routed topic: `[topic, payload]`.
public struct TopicMessage: Sendable {
    public var topic: [UInt8]
    public var payload: [UInt8]

    public init(topic: [UInt8], payload: [UInt8]) {
        self.topic = topic
        self.payload = payload
    }
}

/// Routed delivery on a ZeroMQ XPUB socket: messages go out on per-recipient topics, and libzmq
/// filters them on the publisher's side, so a subscriber receives only the topics it
/// subscribed to (and a message nobody subscribed to costs one trie lookup).
///
/// Every subscription the socket receives (`ZMQ_XPUB_VERBOSE`: also a second subscriber's to a
/// topic already subscribed) is answered with a *welcome*: a one-frame message `[topic]`, sent
/// after libzmq has added the subscription, so a subscriber that sees the welcome knows that
/// every message published on the topic from then on reaches it, and that what was published
/// before must be read from the source of truth. SUB sockets resubscribe by themselves after a
/// reconnect, so a restart of either side produces a welcome too.
///
/// Messages are built and sent by the socket thread: `publish(_:)` takes a closure, so a caller
/// on a database queue hands over a compact description (keys and a template) and returns at
/// once. PUB/XPUB never blocks: past the send high-water mark a subscriber's messages are
/// dropped (the subscriber notices by sequence numbers; counted nowhere here).
public final class TopicPublisher: Service {
    private let name: String
    private let context: ZMQContext
    private let bindEndpoint: String
    private let logger: Logger
    private let security: TransportSecurity
    private let sendHighWaterMark: Int32
    private let queue = Locked<[@Sendable () -> [TopicMessage]]>([])
    private let wakeup = Wakeup()
    private let stopRequested = Atomic<Bool>(false)
    private let finished = Locked<(done: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
    private let stats = Locked<[String: Int64]>([:])
    private let socket = Locked<SocketBox?>(nil)

    /// - Parameters:
    ///   - bind: the XPUB endpoint, e.g. `tcp://127.0.0.1:5557` (`:*` for an ephemeral port).
    ///   - sendHighWaterMark: messages queued per subscriber before libzmq drops (ZMQ_SNDHWM).
    public init(
        name: String, context: ZMQContext, bind: String, logger: Logger, security: TransportSecurity = .current,
        sendHighWaterMark: Int32 = 200_000
    ) {
        self.name = name
        self.context = context
        self.bindEndpoint = bind
        self.logger = logger
        self.security = security
        self.sendHighWaterMark = sendHighWaterMark
    }

    /// Binds the socket (the thread starts in `run()`).
    /// - Returns: the endpoint bound (an ephemeral port resolved).
    /// - Throws: `ZMQError` when the bind fails.
    @discardableResult
    public func bind() throws -> String {
        let xpub = try ZMQSocket(context, .xpub)
        try SocketDefaults.apply(xpub)
        try xpub.setHighWaterMarks(send: sendHighWaterMark, receive: 100_000)
        try xpub.set(ZMQ_XPUB_VERBOSE, 1)
        try security.configureServer(xpub)
        let endpoint = try xpub.bind(bindEndpoint)
        socket.withLock { $0 = SocketBox(xpub) }
        return endpoint
    }

    /// Queues messages for the socket thread; `build` runs there, in call order.
    public func publish(_ build: @escaping @Sendable () -> [TopicMessage]) {
        queue.withLock { $0.append(build) }
        wakeup.signal()
    }

    /// `delivery.published` (messages handed to libzmq), `delivery.subscribes` and
    /// `delivery.welcomes`.
    public func counters() -> [String: Int64] { stats.withLock { $0 } }

    /// Runs the socket thread until cancelled or stopped; returns once the socket is closed.
    public func run() async {
        guard
            let box = socket.withLock({ s -> SocketBox? in
                defer { s = nil }
                return s
            })
        else { return }
        let thread = Thread { [self] in self.loop(box.take()) }
        thread.name = "\(name).xpub"
        thread.start()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let done = finished.withLock { f -> Bool in
                    if f.done { return true }
                    f.waiter = c
                    return false
                }
                if done { c.resume() }
            }
        } onCancel: {
            self.shutdownGracefully()
        }
    }

    /// Stops the thread (queued messages not yet sent are dropped).
    public func shutdownGracefully() {
        stopRequested.store(true, ordering: .releasing)
        wakeup.signal()
    }

    private func loop(_ xpub: ZMQSocket) {
        let poller = Poller([.socket(xpub), .fd(wakeup.fd)])
        var published: Int64 = 0
        do {
            while !stopRequested.load(ordering: .acquiring) {
                let ready = try poller.poll(timeoutMs: 1_000)
                if ready[1] { wakeup.drain() }
                if ready[0] {
                    var subscribes: Int64 = 0
                    while let frames = try xpub.receive(dontWait: true) {
                        // A subscription message: 1 (subscribe) or 0 (unsubscribe), then the topic.
                        guard let frame = frames.first, frame.first == 1 else { continue }
                        let topic = Array(frame.dropFirst())
                        if topic.isEmpty { continue }  // subscribe-to-everything: nothing to welcome
                        _ = try xpub.send([topic], dontWait: true)
                        subscribes += 1
                    }
                    if subscribes > 0 {
                        stats.withLock {
                            $0["delivery.subscribes", default: 0] += subscribes
                            $0["delivery.welcomes", default: 0] += subscribes
                        }
                    }
                }
                let work = queue.withLock { q -> [@Sendable () -> [TopicMessage]] in
                    defer { q.removeAll() }
                    return q
                }
                for build in work {
                    for message in build() {
                        _ = try xpub.send([message.topic, message.payload], dontWait: true)
                        published += 1
                    }
                }
                if !work.isEmpty {
                    let total = published
                    stats.withLock { $0["delivery.published"] = total }
                }
            }
        } catch ZMQError.contextTerminated {
            // shutting down
        } catch {
            logger.error("delivery.loop_failed", metadata: ["error": "\(error)"])
        }
        xpub.close()
        let waiter = finished.withLock { f -> CheckedContinuation<Void, Never>? in
            f.done = true
            defer { f.waiter = nil }
            return f.waiter
        }
        waiter?.resume()
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
