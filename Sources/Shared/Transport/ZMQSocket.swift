import CZMQ

#if canImport(Glibc)
    import Glibc
#endif

/// The libzmq socket types this project uses.
public enum ZMQSocketType: Int32, Sendable {
    case pair = 0
    case pub = 1
    case sub = 2
    case req = 3
    case rep = 4
    case dealer = 5
    case router = 6
    case pull = 7
    case push = 8
    case xpub = 9
    case xsub = 10
}

/// A libzmq socket: the only owner of its handle.
///
/// Not thread-safe and not `Sendable`: create it on the thread that uses it and keep it there.
/// LINGER is set at creation (default 0 ms: pending messages are dropped on close, so shutdown is
/// never held up by an absent peer). The handle is closed in `close()` or `deinit`.
public final class ZMQSocket {
    private var handle: UnsafeMutableRawPointer?
    /// Kept so the context outlives the socket (zmq_ctx_term waits for open sockets).
    public let context: ZMQContext
    public let type: ZMQSocketType

    /// Creates a socket.
    /// - Parameters:
    ///   - lingerMs: ZMQ_LINGER in milliseconds (0 = drop unsent messages on close).
    /// - Throws: `ZMQError` when libzmq cannot create it (e.g. too many sockets, ETERM).
    public init(_ context: ZMQContext, _ type: ZMQSocketType, lingerMs: Int32 = 0) throws {
        guard let h = zmq_socket(context.handle, type.rawValue) else { throw ZMQError.current("zmq_socket") }
        self.handle = h
        self.context = context
        self.type = type
        do { try set(ZMQ_LINGER, lingerMs) } catch {
            zmq_close(h)
            self.handle = nil
            throw error
        }
    }

    deinit { close() }

    /// Closes the socket. Idempotent.
    public func close() {
        if let h = handle {
            zmq_close(h)
            handle = nil
        }
    }

    var raw: UnsafeMutableRawPointer {
        guard let h = handle else { preconditionFailure("socket used after close") }
        return h
    }

    /// The socket's `ZMQ_FD`: readable when the socket may have something to do (a message, a
    /// command). Edge-like: after it fires, the socket must be read (or its `ZMQ_EVENTS` asked)
    /// until nothing is left before it fires again (zmq_getsockopt(3)).
    /// - Throws: `ZMQError` when the option cannot be read.
    public func fileDescriptor() throws -> Int32 {
        var fd: Int32 = -1
        var size = MemoryLayout<Int32>.size
        if zmq_getsockopt(raw, ZMQ_FD, &fd, &size) != 0 { throw ZMQError.current("zmq_getsockopt ZMQ_FD") }
        return fd
    }

    /// The socket's `ZMQ_EVENTS`: whether a message can be read (`ZMQ_POLLIN`) or sent
    /// (`ZMQ_POLLOUT`) without waiting. Asking processes the socket's pending commands (a
    /// connection attached, a reader woken) without the throttle `zmq_send` applies to them
    /// (zmq_getsockopt(3)).
    /// - Returns: the `ZMQ_POLLIN | ZMQ_POLLOUT` bits.
    /// - Throws: `ZMQError` when the option cannot be read.
    public func events() throws -> Int32 {
        var events: Int32 = 0
        var size = MemoryLayout<Int32>.size
        if zmq_getsockopt(raw, ZMQ_EVENTS, &events, &size) != 0 { throw ZMQError.current("zmq_getsockopt ZMQ_EVENTS") }
        return events
    }

    // MARK: Options

    /// Sets an integer option (`zmq_setsockopt` with an `int`).
    public func set(_ option: Int32, _ value: Int32) throws {
        var v = value
        if zmq_setsockopt(raw, option, &v, MemoryLayout<Int32>.size) != 0 {
            throw ZMQError.current("zmq_setsockopt \(option)")
        }
    }

    /// Sets a binary or string option (routing id, subscribe prefix, CURVE keys).
    public func set(_ option: Int32, bytes: [UInt8]) throws {
        let rc = bytes.withUnsafeBytes { zmq_setsockopt(raw, option, $0.baseAddress, $0.count) }
        if rc != 0 { throw ZMQError.current("zmq_setsockopt \(option)") }
    }

    /// Sets a string option.
    public func set(_ option: Int32, string: String) throws { try set(option, bytes: Array(string.utf8)) }

    /// Reads a string option (e.g. ZMQ_LAST_ENDPOINT).
    public func getString(_ option: Int32) throws -> String {
        var buffer = [CChar](repeating: 0, count: 512)
        var size = buffer.count
        if zmq_getsockopt(raw, option, &buffer, &size) != 0 { throw ZMQError.current("zmq_getsockopt \(option)") }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Send and receive high-water marks, in messages. libzmq's default is 1000 each.
    public func setHighWaterMarks(send: Int32, receive: Int32) throws {
        try set(ZMQ_SNDHWM, send)
        try set(ZMQ_RCVHWM, receive)
    }

    /// ZMTP heartbeats (libzmq ≥ 4.2): ping every `intervalMs`, drop the peer after `timeoutMs`
    /// without traffic, and ask the peer to use `ttlMs` for us.
    public func setHeartbeat(intervalMs: Int32, timeoutMs: Int32, ttlMs: Int32) throws {
        try set(ZMQ_HEARTBEAT_IVL, intervalMs)
        try set(ZMQ_HEARTBEAT_TIMEOUT, timeoutMs)
        try set(ZMQ_HEARTBEAT_TTL, ttlMs)
    }

    /// Reconnect back-off: first retry after `intervalMs`, doubling up to `maxMs`.
    public func setReconnect(intervalMs: Int32, maxMs: Int32) throws {
        try set(ZMQ_RECONNECT_IVL, intervalMs)
        try set(ZMQ_RECONNECT_IVL_MAX, maxMs)
    }

    /// Sets the routing id this socket presents to ROUTER peers.
    public func setRoutingId(_ id: [UInt8]) throws { try set(ZMQ_ROUTING_ID, bytes: id) }

    /// Subscribes a SUB socket to a topic prefix (empty = everything).
    public func subscribe(_ prefix: String) throws { try set(ZMQ_SUBSCRIBE, string: prefix) }

    // MARK: Endpoints

    /// Binds and returns the endpoint actually bound (resolves `tcp://host:*` to its port).
    @discardableResult
    public func bind(_ endpoint: String) throws -> String {
        if zmq_bind(raw, endpoint) != 0 { throw ZMQError.current("zmq_bind \(endpoint)") }
        return (try? getString(ZMQ_LAST_ENDPOINT)) ?? endpoint
    }

    /// Connects (asynchronously: libzmq connects and reconnects in the background).
    public func connect(_ endpoint: String) throws {
        if zmq_connect(raw, endpoint) != 0 { throw ZMQError.current("zmq_connect \(endpoint)") }
    }

    /// Disconnects from an endpoint given to `connect` before (the exact same string); messages
    /// queued for it are dropped.
    public func disconnect(_ endpoint: String) throws {
        if zmq_disconnect(raw, endpoint) != 0 { throw ZMQError.current("zmq_disconnect \(endpoint)") }
    }

    /// Starts a socket monitor publishing `events` (ZMQ_EVENT_* bits) on an inproc PAIR endpoint.
    public func monitor(_ endpoint: String, events: Int32) throws {
        if zmq_socket_monitor(raw, endpoint, events) != 0 { throw ZMQError.current("zmq_socket_monitor") }
    }

    // MARK: Messages

    /// Sends a multipart message. EINTR is retried.
    /// - Returns: `false` when `dontWait` is set and the send would block (EAGAIN), `true` when sent.
    /// - Throws: `ZMQError` for every other failure, including `.contextTerminated`.
    @discardableResult
    public func send(_ frames: [[UInt8]], dontWait: Bool = false) throws -> Bool {
        for (i, frame) in frames.enumerated() {
            var flags: Int32 = dontWait ? ZMQ_DONTWAIT : 0
            if i < frames.count - 1 { flags |= ZMQ_SNDMORE }
            while true {
                let rc = frame.withUnsafeBytes { zmq_send(raw, $0.baseAddress, $0.count, flags) }
                if rc >= 0 { break }
                let e = zmq_errno()
                if e == EINTR { continue }
                // libzmq sends multipart messages atomically: EAGAIN can only happen on the first frame.
                if e == EAGAIN && i == 0 { return false }
                throw ZMQError.current("zmq_send")
            }
        }
        return true
    }

    /// Receives one whole multipart message. EINTR is retried.
    /// - Returns: `nil` when `dontWait` is set and nothing is waiting (EAGAIN).
    /// - Throws: `ZMQError` (`.contextTerminated` once the context shuts down).
    public func receive(dontWait: Bool = false) throws -> [[UInt8]]? {
        var frames: [[UInt8]] = []
        while true {
            var msg = zmq_msg_t()
            zmq_msg_init(&msg)
            defer { zmq_msg_close(&msg) }
            while zmq_msg_recv(&msg, raw, dontWait && frames.isEmpty ? ZMQ_DONTWAIT : 0) < 0 {
                let e = zmq_errno()
                if e == EINTR { continue }
                if e == EAGAIN && frames.isEmpty { return nil }
                throw ZMQError.current("zmq_msg_recv")
            }
            let size = zmq_msg_size(&msg)
            if size > 0, let data = zmq_msg_data(&msg) {
                frames.append(Array(UnsafeRawBufferPointer(start: data, count: size)))
            } else {
                frames.append([])
            }
            if zmq_msg_more(&msg) == 0 { return frames }
        }
    }
}

/// Sockets are confined to the thread that created them (libzmq sockets are not thread-safe).
@available(*, unavailable, message: "ZMQSocket is confined to one thread")
extension ZMQSocket: Sendable {}
