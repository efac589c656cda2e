import CZMQ
import Foundation
import Support
import Synchronization
import Transport

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
/// once. The thread also keeps count of the subscriptions (`ZMQ_XPUB_VERBOSER`: every subscribe
/// and unsubscribe, also those of a subscriber that went away), so the closure can skip building
/// the messages nobody subscribed to: a fan-out to 100,000 recipients of whom 1,000 have a
/// stream open builds 1,000 messages. PUB/XPUB never blocks: past the send high-water mark a
/// subscriber's messages are dropped (the subscriber notices by sequence numbers).
public final class TopicPublisher: Service {
    private let name: String
    private let context: ZMQContext
    private let bindEndpoint: String
    private let logger: Logger
    private let security: TransportSecurity
    private let sendHighWaterMark: Int32
    /// Builds messages; its argument tells whether a topic has a subscriber.
    public typealias Builder = @Sendable (_ isSubscribed: ([UInt8]) -> Bool) -> [TopicMessage]
    private let queue = Locked<[Builder]>([])
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
        try SocketDefaults.applyStreaming(xpub)
        try xpub.setHighWaterMarks(send: sendHighWaterMark, receive: 100_000)
        try xpub.set(ZMQ_XPUB_VERBOSE, 1)
        try xpub.set(ZMQ_XPUB_VERBOSER, 1)
        try security.configureServer(xpub)
        let endpoint = try xpub.bind(bindEndpoint)
        socket.withLock { $0 = SocketBox(xpub) }
        return endpoint
    }

    /// Queues messages for the socket thread; `build` runs there, in call order, and may leave
    /// out the topics its argument says nobody subscribed to (prefix semantics, as libzmq's).
    public func publish(_ build: @escaping Builder) {
        queue.withLock { $0.append(build) }
        wakeup.signal()
    }

    /// Queues messages for the socket thread, built there (libzmq drops those nobody subscribed to).
    public func publish(_ build: @escaping @Sendable () -> [TopicMessage]) {
        publish { (_: ([UInt8]) -> Bool) in build() }
    }

    /// `delivery.published` (messages handed to libzmq), `delivery.subscribes` and
    /// `delivery.welcomes`, `delivery.topics` (topics with a subscriber now).
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
        var subscriptions = Subscriptions()
        do {
            while !stopRequested.load(ordering: .acquiring) {
                let ready = try poller.poll(timeoutMs: 1_000)
                if ready[1] { wakeup.drain() }
                if ready[0] {
                    var subscribes: Int64 = 0
                    while let frames = try xpub.receive(dontWait: true) {
                        // A subscription message: 1 (subscribe) or 0 (unsubscribe), then the topic.
                        guard let frame = frames.first, let kind = frame.first, kind <= 1 else { continue }
                        let topic = Array(frame.dropFirst())
                        guard kind == 1 else {
                            subscriptions.remove(topic)
                            continue
                        }
                        subscriptions.add(topic)
                        subscribes += 1
                        if !topic.isEmpty { _ = try xpub.send([topic], dontWait: true) }  // the welcome
                    }
                    let topics = Int64(subscriptions.count)
                    stats.withLock {
                        $0["delivery.subscribes", default: 0] += subscribes
                        $0["delivery.welcomes", default: 0] += subscribes
                        $0["delivery.topics"] = topics
                    }
                }
                let work = queue.withLock { q -> [Builder] in
                    defer { q.removeAll() }
                    return q
                }
                for build in work {
                    for message in build({ subscriptions.matches($0) }) {
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

/// The publisher's count of subscriptions by topic (several subscribers may hold one), and of
/// the topic lengths in use, so a topic is matched against each subscribed prefix length with
/// one lookup (usually one length: the recipients' fixed-width topics).
private struct Subscriptions {
    private var counts: [[UInt8]: Int] = [:]
    private var lengths: [Int: Int] = [:]

    var count: Int { counts.count }

    mutating func add(_ topic: [UInt8]) {
        counts[topic, default: 0] += 1
        lengths[topic.count, default: 0] += 1
    }

    mutating func remove(_ topic: [UInt8]) {
        guard let n = counts[topic] else { return }  // never seen: nothing to undo
        counts[topic] = n > 1 ? n - 1 : nil
        let l = lengths[topic.count] ?? 0
        lengths[topic.count] = l > 1 ? l - 1 : nil
    }

    /// Whether some subscription is a prefix of `topic` (libzmq's matching rule).
    func matches(_ topic: [UInt8]) -> Bool {
        for length in lengths.keys where length <= topic.count {
            if length == topic.count ? counts[topic] != nil : counts[Array(topic.prefix(length))] != nil { return true }
        }
        return false
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
