import CMicroHTTPD
import Synchronization

/// The state of one request on one connection, shared between the daemon thread (which owns
/// the connection) and the task that computes the response. Held by libmicrohttpd's `con_cls`
/// as a retained `Unmanaged` reference, released in the request-completed callback.
final class ConnectionContext: Sendable {
    enum Phase: Sendable {
        /// Collecting the body.
        case receiving
        /// Suspended while the handler runs.
        case processing
        /// The handler finished; the connection was resumed to queue this.
        case ready(HTTPResponse)
        /// A response was queued.
        case done
    }
    private struct State {
        var phase: Phase = .receiving
        var body: [UInt8] = []
        var tooLarge = false
    }
    let connection: ConnectionHandle
    let method: String
    let path: String
    let headers: [String: String]
    let query: [String: String]
    private let state = Mutex(State())

    init(
        connection: ConnectionHandle, method: String, path: String, headers: [String: String],
        query: [String: String]
    ) {
        self.connection = connection
        self.method = method
        self.path = path
        self.headers = headers
        self.query = query
    }

    /// Appends uploaded bytes; returns false once the total exceeds `limit` (the body is dropped).
    func appendBody(_ bytes: UnsafeRawBufferPointer, limit: Int) -> Bool {
        state.withLock { s in
            if s.tooLarge { return false }
            if s.body.count + bytes.count > limit {
                s.tooLarge = true
                s.body = []
                return false
            }
            s.body.append(contentsOf: bytes)
            return true
        }
    }

    var isTooLarge: Bool { state.withLock { $0.tooLarge } }

    var phase: Phase { state.withLock { $0.phase } }

    func setPhase(_ phase: Phase) { state.withLock { $0.phase = phase } }

    /// The request with its body, for the handler.
    func request() -> HTTPRequest {
        HTTPRequest(
            method: method, path: path, query: query, headers: headers, body: state.withLock { $0.body })
    }

    /// Moves from `processing` to `ready`; returns false if it was not processing (already resumed).
    func complete(_ response: HTTPResponse) -> Bool {
        state.withLock { s in
            guard case .processing = s.phase else { return false }
            s.phase = .ready(response)
            return true
        }
    }
}

/// A libmicrohttpd connection (or daemon) pointer that may cross threads: libmicrohttpd allows
/// `MHD_resume_connection` from any thread, and a connection pointer stays valid until its
/// request completes (a suspended connection is never closed before it is resumed).
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}
