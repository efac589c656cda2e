import CMicroHTTPD
import Foundation
import Shared
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd (GNU libmicrohttpd 0.9.75, Debian `libmicrohttpd-dev`).
///
/// The daemon runs one internal epoll thread (`MHD_USE_EPOLL_INTERNAL_THREAD`). For each request
/// the access handler collects the body (at most `maxBodyBytes`, else 413 as soon as the
/// `Content-Length` or the upload exceeds it), suspends the connection
/// (`MHD_ALLOW_SUSPEND_RESUME`), runs the async `handler` in a task, and resumes the connection
/// when the task has stored its response; the next callback queues it. The daemon thread never
/// waits on async work. Server-Sent Events responses are read from an `EventStream`.
final class HTTPServer: Sendable {
    typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse

    struct Configuration: Sendable {
        /// Address to bind, e.g. `0.0.0.0`.
        var host: String = "0.0.0.0"
        /// Port; 0 binds an ephemeral one.
        var port: Int = 8080
        /// Concurrent connections accepted.
        var connectionLimit: Int = 10_000
        /// Idle connection timeout in seconds.
        var connectionTimeoutSeconds: Int = 120
        /// Largest request body in bytes (1 MiB).
        var maxBodyBytes: Int = 1 << 20
    }

    private struct State {
        var daemon: ConnectionHandle?
        var stopping = false
        /// Requests suspended while their handler runs, by context identity.
        var suspended: [ObjectIdentifier: ConnectionContext] = [:]
    }

    let configuration: Configuration
    let handler: Handler
    let logger: Logger
    /// Called with the response of a request that was refused before reaching the handler
    /// (413), for metrics.
    let onRefused: @Sendable (String, String, Int) -> Void
    private let state = Mutex(State())

    init(
        configuration: Configuration, logger: Logger,
        onRefused: @escaping @Sendable (String, String, Int) -> Void = { _, _, _ in },
        handler: @escaping Handler
    ) {
        self.configuration = configuration
        self.logger = logger
        self.handler = handler
        self.onRefused = onRefused
    }

    /// Binds and starts the daemon thread.
    /// - Returns: the port actually bound.
    /// - Throws: `ServerError` when the address cannot be bound or the daemon does not start.
    func start() throws -> Int {
        let (fd, port) = try Self.listenSocket(host: configuration.host, port: configuration.port)
        let flags =
            MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_ERROR_LOG.rawValue
        let me = Unmanaged.passUnretained(self).toOpaque()
        let completed = unsafeBitCast(
            requestCompleted as MHD_RequestCompletedCallback, to: UnsafeMutableRawPointer.self)
        let args: [CVarArg] = [
            MHD_OPTION.LISTEN_SOCKET.rawValue, fd,
            MHD_OPTION.CONNECTION_LIMIT.rawValue, UInt32(configuration.connectionLimit),
            MHD_OPTION.CONNECTION_TIMEOUT.rawValue, UInt32(configuration.connectionTimeoutSeconds),
            MHD_OPTION.NOTIFY_COMPLETED.rawValue, Int(bitPattern: completed), Int(bitPattern: me),
            MHD_OPTION.END.rawValue,
        ]
        let daemon = withVaList(args) { va in
            MHD_start_daemon_va(UInt32(flags), 0, nil, nil, accessHandler, me, va)
        }
        guard let daemon else {
            close(fd)
            throw ServerError(message: "libmicrohttpd did not start on \(configuration.host):\(port)")
        }
        state.withLock { $0.daemon = ConnectionHandle(pointer: daemon) }
        return port
    }

    /// Answers every suspended request with 503, then stops the daemon (joins its thread).
    /// Open event streams must have been closed first (their connections resumed).
    func stop() {
        let (daemon, suspended) = state.withLock { s -> (ConnectionHandle?, [ConnectionContext]) in
            s.stopping = true
            let list = Array(s.suspended.values)
            s.suspended.removeAll()
            let d = s.daemon
            s.daemon = nil
            return (d, list)
        }
        for context in suspended
        where context.complete(Problem.serviceUnavailable("the gateway is stopping").response) {
            MHD_resume_connection(context.connection.pointer)
        }
        if let daemon { MHD_stop_daemon(daemon.pointer) }
    }

    // MARK: Daemon-thread side

    /// Handles one access-handler callback (see `MHD_AccessHandlerCallback`).
    fileprivate func access(
        connection: OpaquePointer, url: String, method: String, upload: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>, conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = conCls.pointee else {
            // First call: headers are in.
            let headers = Self.values(connection, .HEADER_KIND, lowercased: true)
            let query = Self.values(connection, .GET_ARGUMENT_KIND, lowercased: false)
            let context = ConnectionContext(
                connection: ConnectionHandle(pointer: connection), method: method, path: url,
                headers: headers, query: query)
            conCls.pointee = Unmanaged.passRetained(context).toOpaque()
            if let length = headers["content-length"].flatMap({ Int($0) }),
                length > configuration.maxBodyBytes
            {
                context.setPhase(.done)
                onRefused(method, url, 413)
                return queue(Problem.payloadTooLarge(configuration.maxBodyBytes).response, on: connection)
            }
            return .YES
        }
        let context = Unmanaged<ConnectionContext>.fromOpaque(raw).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            if let upload {
                _ = context.appendBody(
                    UnsafeRawBufferPointer(start: upload, count: uploadSize.pointee),
                    limit: configuration.maxBodyBytes)
            }
            uploadSize.pointee = 0
            return .YES
        }
        switch context.phase {
        case .receiving:
            if context.isTooLarge {
                context.setPhase(.done)
                onRefused(method, url, 413)
                return queue(Problem.payloadTooLarge(configuration.maxBodyBytes).response, on: connection)
            }
            let accepted = state.withLock { s -> Bool in
                if s.stopping { return false }
                context.setPhase(.processing)
                s.suspended[ObjectIdentifier(context)] = context
                // Suspend before the task exists, so its resume always follows the suspend.
                MHD_suspend_connection(connection)
                return true
            }
            guard accepted else {
                context.setPhase(.done)
                return queue(Problem.serviceUnavailable("the gateway is stopping").response, on: connection)
            }
            let request = context.request()
            let handler = self.handler
            Task {
                let response = await handler(request)
                self.finish(context, response)
            }
            return .YES
        case .processing:
            return .YES
        case .ready(let response):
            context.setPhase(.done)
            return queue(response, on: connection)
        case .done:
            return .YES
        }
    }

    /// Stores the handler's response and resumes the connection (any thread).
    private func finish(_ context: ConnectionContext, _ response: HTTPResponse) {
        let mine = state.withLock { s in
            s.suspended.removeValue(forKey: ObjectIdentifier(context)) != nil
        }
        guard mine else {
            // Shutdown answered it already; a stream must not stay open.
            if case .stream(let stream) = response.body { stream.close() }
            return
        }
        if context.complete(response) { MHD_resume_connection(context.connection.pointer) }
    }

    /// Queues a response on the daemon thread.
    private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        let mhdResponse: OpaquePointer?
        switch response.body {
        case .bytes(let bytes):
            mhdResponse = bytes.withUnsafeBytes { buf in
                MHD_create_response_from_buffer(
                    buf.count, UnsafeMutableRawPointer(mutating: buf.baseAddress), .RESPMEM_MUST_COPY)
            }
        case .stream(let stream):
            stream.attach(connection)
            let cls = Unmanaged.passRetained(stream).toOpaque()
            mhdResponse = MHD_create_response_from_callback(
                UInt64.max, 4096, streamReader, cls, streamFree)
            if mhdResponse == nil { Unmanaged<EventStream>.fromOpaque(cls).release() }
        }
        guard let mhdResponse else { return .NO }
        for (name, value) in response.headers { _ = MHD_add_response_header(mhdResponse, name, value) }
        let result = MHD_queue_response(connection, UInt32(response.status), mhdResponse)
        MHD_destroy_response(mhdResponse)
        return result
    }

    /// The connection's values of one kind (headers or query arguments).
    private static func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind, lowercased: Bool)
        -> [String: String]
    {
        let box = ValuesBox(lowercased: lowercased)
        let cls = Unmanaged.passUnretained(box).toOpaque()
        _ = MHD_get_connection_values(connection, kind, collectValue, cls)
        return box.values
    }

    /// Creates, binds and listens on a TCP socket; returns it and the bound port.
    private static func listenSocket(host: String, port: Int) throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError(message: "socket() failed: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else {
            close(fd)
            throw ServerError(message: "GATEWAY_HOST=\(host) is not an IPv4 address")
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 4096) == 0 else {
            let e = errno
            close(fd)
            throw ServerError(message: "cannot listen on \(host):\(port): errno \(e)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: actual.sin_port)))
    }
}

/// A server start failure.
struct ServerError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Collects key/value pairs from `MHD_get_connection_values` (used synchronously on the daemon thread).
private final class ValuesBox {
    let lowercased: Bool
    var values: [String: String] = [:]
    init(lowercased: Bool) { self.lowercased = lowercased }
}

private let collectValue: MHD_KeyValueIterator = { cls, _, key, value in
    guard let cls, let key else { return .YES }
    let box = Unmanaged<ValuesBox>.fromOpaque(cls).takeUnretainedValue()
    let name = String(cString: key)
    box.values[box.lowercased ? name.lowercased() : name] = value.map { String(cString: $0) } ?? ""
    return .YES
}

private let accessHandler: MHD_AccessHandlerCallback = {
    cls, connection, url, method, _, upload, uploadSize, conCls in
    guard let cls, let connection, let uploadSize, let conCls else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    return server.access(
        connection: connection, url: url.map { String(cString: $0) } ?? "/",
        method: method.map { String(cString: $0) } ?? "GET",
        upload: upload, uploadSize: uploadSize, conCls: conCls)
}

private let requestCompleted: MHD_RequestCompletedCallback = { _, _, conCls, _ in
    guard let conCls, let raw = conCls.pointee else { return }
    Unmanaged<ConnectionContext>.fromOpaque(raw).release()
    conCls.pointee = nil
}

private let streamReader: MHD_ContentReaderCallback = { cls, _, buf, max in
    guard let cls, let buf else { return Int(MHD_CONTENT_READER_END_WITH_ERROR) }
    return Unmanaged<EventStream>.fromOpaque(cls).takeUnretainedValue().read(into: buf, max: max)
}

private let streamFree: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    let stream = Unmanaged<EventStream>.fromOpaque(cls).takeRetainedValue()
    stream.finished()
}
