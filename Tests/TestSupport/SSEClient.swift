import Foundation
import Harness
import Messages
import Support
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A Server-Sent Events reader on its own thread (WHATWG HTML §9.2 event stream format):
/// collects events (`id`, `event`, `data`) and counts comment lines until the server closes.
public final class SSEClient: Sendable {
    public struct Event: Sendable {
        public var id: String?
        public var event: String?
        public var data: String
        public var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any] ?? [:]
        }
    }

    private let box = SSEState()
    private let fd: Int32

    /// Opens `GET path` with the bearer token (and `Last-Event-ID` when given).
    /// - Throws: `TestSupportError` if it cannot connect.
    public init(port: Int, token: String, path: String = "/v1/notifications/stream", lastEventId: String? = nil) throws {
        fd = try connectSocket(host: "127.0.0.1", port: port, timeoutSeconds: 120)
        var req = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: Bearer \(token)\r\n"
        if let lastEventId { req += "Last-Event-ID: \(lastEventId)\r\n" }
        try sendAll(fd, Array((req + "\r\n").utf8))
        let fd = self.fd
        let box = self.box
        let thread = Thread {

            var raw: [UInt8] = []
            var headerDone = false
            var chunked = false
            var body: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 16384)
            var current: (id: String?, event: String?, data: [String]) = (nil, nil, [])
            while true {
                let n = receiveSome(fd, &buf)
                if n <= 0 { break }
                raw.append(contentsOf: buf[0..<n])
                if !headerDone {
                    guard let end = findHeaderEnd(raw) else { continue }
                    let head = String(decoding: raw[0..<end], as: UTF8.self)
                    let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
                    chunked = head.lowercased().contains("transfer-encoding: chunked")
                    box.state.withLock { $0.status = status }
                    raw.removeFirst(end + 4)
                    headerDone = true
                }
                if chunked {
                    // move complete chunks from raw into body
                    while let nl = raw.firstIndex(of: 10) {
                        let sizeText = String(decoding: raw[0..<nl], as: UTF8.self).trimmingCharacters(
                            in: .whitespacesAndNewlines)
                        guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16) else { break }
                        if size == 0 {
                            raw.removeAll()
                            break
                        }
                        guard raw.count >= nl + 1 + size + 2 else { break }
                        body.append(contentsOf: raw[(nl + 1)..<(nl + 1 + size)])
                        raw.removeFirst(nl + 1 + size + 2)
                    }
                } else {
                    body.append(contentsOf: raw)
                    raw.removeAll()
                }
                while let nl = body.firstIndex(of: 10) {
                    var line = String(decoding: body[0..<nl], as: UTF8.self)
                    body.removeFirst(nl + 1)
                    if line.hasSuffix("\r") { line.removeLast() }
                    if line.isEmpty {
                        if !current.data.isEmpty || current.id != nil {
                            let e = Event(id: current.id, event: current.event, data: current.data.joined(separator: "\n"))
                            box.state.withLock { $0.events.append(e) }
                            box.notify()
                        }
                        current = (nil, nil, [])
                    } else if line.hasPrefix(":") {
                        box.state.withLock { $0.comments += 1 }
                        box.notify()
                    } else {
                        let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
                        let key = String(parts[0])
                        var value = parts.count > 1 ? String(parts[1]) : ""
                        if value.hasPrefix(" ") { value.removeFirst() }
                        switch key {
                        case "id": current.id = value
                        case "event": current.event = value
                        case "data": current.data.append(value)
                        default: break
                        }
                    }
                }
            }
            box.state.withLock { $0.closed = true }
            box.notify()
        }
        thread.start()
    }

    public var events: [Event] { box.state.withLock { $0.events } }
    public var comments: Int { box.state.withLock { $0.comments } }
    public var isClosed: Bool { box.state.withLock { $0.closed } }
    public var status: Int? { box.state.withLock { $0.status } }

    /// Waits until the gateway has registered the stream: its first comment (`: connected`) has
    /// arrived (true), or the stream closed or `timeout` seconds passed first (false). A live
    /// stream gets only what is created after this point.
    public func waitUntilOpen(timeout: Double = 60) async -> Bool {
        await box.wait(timeout: timeout) { $0.comments >= 1 || $0.closed }
        return comments >= 1
    }

    /// Waits until `count` events arrived (true), or the stream closed or `timeout` seconds
    /// passed first (false). Woken by the reader thread, not by polling.
    public func waitFor(count: Int, timeout: Double = 60) async -> Bool {
        await box.wait(timeout: timeout) { $0.events.count >= count || $0.closed }
        return events.count >= count
    }

    /// Waits until the server closed the stream. - Returns: whether it closed within `timeout` s.
    public func waitForClose(timeout: Double = 60) async -> Bool {
        await box.wait(timeout: timeout) { $0.closed }
        return isClosed
    }

    /// Closes the connection from the client side.
    public func close() { shutdown(fd, Int32(SHUT_RDWR)) }

    deinit { Glibc.close(fd) }
}

/// The reader's state and the tasks waiting on it.
final class SSEState: Sendable {
    struct Values {
        var events: [SSEClient.Event] = []
        var comments = 0
        var closed = false
        var status: Int? = nil
    }
    typealias Waiter = (id: Int, ready: @Sendable (Values) -> Bool, continuation: CheckedContinuation<Void, Never>)
    let state = Locked(Values())
    private let waiters = Locked<(next: Int, list: [Waiter])>((0, []))

    /// Resumes every waiter whose condition now holds.
    func notify() {
        let values = state.withLock { $0 }
        let ready = waiters.withLock { w -> [Waiter] in
            let r = w.list.filter { $0.ready(values) }
            w.list.removeAll { $0.ready(values) }
            return r
        }
        for w in ready { w.continuation.resume() }
    }

    /// Suspends until `ready` holds or `timeout` seconds pass.
    func wait(timeout: Double, _ ready: @escaping @Sendable (Values) -> Bool) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let id = waiters.withLock { w -> Int in
                w.next += 1
                w.list.append((w.next, ready, c))
                return w.next
            }
            notify()
            Task {
                try? await Task.sleep(for: .seconds(timeout))
                let timedOut = self.waiters.withLock { w -> Waiter? in
                    guard let i = w.list.firstIndex(where: { $0.id == id }) else { return nil }
                    return w.list.remove(at: i)
                }
                timedOut?.continuation.resume()
            }
        }
    }
}
