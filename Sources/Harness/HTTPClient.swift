import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A minimal blocking HTTP/1.1 client over a loopback socket, for tests: one request per
/// connection (`Connection: close`), Content-Length or chunked bodies.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]
    /// The body parsed as a JSON object or array (nil if it is not JSON).
    public var json: Any? { try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) }
    public var object: [String: Any] { json as? [String: Any] ?? [:] }
    public var text: String { String(decoding: body, as: UTF8.self) }
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

public struct HTTPClient: Sendable {
    public var port: Int
    public var host: String
    public init(port: Int, host: String = "127.0.0.1") {
        self.port = port
        self.host = host
    }

    /// Sends a request. `json` is serialised as the body with `Content-Type: application/json`;
    /// `raw` sends bytes as given.
    /// - Throws: `TestSupportError` when the connection fails.
    public func request(
        _ method: String, _ path: String, token: String? = nil, json: Any? = nil, raw: [UInt8]? = nil,
        headers: [String: String] = [:], timeoutSeconds: Int = 30
    ) throws -> HTTPResponse {
        var body: [UInt8] = raw ?? []
        var h = headers
        if let json {
            body = Array(try JSONSerialization.data(withJSONObject: json, options: [.fragmentsAllowed]))
            if h["Content-Type"] == nil { h["Content-Type"] = "application/json" }
        }
        if let token { h["Authorization"] = "Bearer \(token)" }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
        for (k, v) in h { head += "\(k): \(v)\r\n" }
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        let fd = try connectSocket(host: host, port: port, timeoutSeconds: timeoutSeconds)
        defer { close(fd) }
        try sendAll(fd, Array(head.utf8) + body)
        var data: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = receiveSome(fd, &buf)
            if n == 0 { break }
            if n < 0 {
                let e = errno
                throw TestSupportError(
                    "recv failed after \(data.count) bytes: errno \(e)\(e == EAGAIN ? " (no reply within \(timeoutSeconds) s)" : "")"
                )
            }
            data.append(contentsOf: buf[0..<n])
        }
        return try parseResponse(data)
    }
}

extension HTTPClient {
    /// Sends only a request's head (with `Content-Length: contentLength`, no body) and reads the
    /// reply until the server closes: what a server that refuses early answers.
    /// - Throws: `TestSupportError` when the connection fails.
    public func requestHeadOnly(
        _ method: String, _ path: String, token: String? = nil, headers: [String: String] = [:], contentLength: Int,
        timeoutSeconds: Int = 30
    ) throws -> HTTPResponse {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Length: \(contentLength)\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        head += "\r\n"
        let fd = try connectSocket(host: host, port: port, timeoutSeconds: timeoutSeconds)
        defer { close(fd) }
        try sendAll(fd, Array(head.utf8))
        var data: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = receiveSome(fd, &buf)
            if n == 0 { break }
            if n < 0 { throw TestSupportError("recv failed after \(data.count) bytes: errno \(errno)") }
            data.append(contentsOf: buf[0..<n])
        }
        return try parseResponse(data)
    }
}

package func connectSocket(host: String, port: Int, timeoutSeconds: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestSupportError("socket failed") }
    var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    inet_pton(AF_INET, host, &addr.sin_addr)
    let rc = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    if rc != 0 && errno == EINTR {
        // The connection goes on in the background; wait for it and read its outcome.
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        while poll(&p, 1, Int32(timeoutSeconds * 1_000)) < 0 && errno == EINTR {}
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        if error == 0 && p.revents & Int16(POLLOUT) != 0 { return fd }
        close(fd)
        throw TestSupportError("connect to \(host):\(port) failed: errno \(error)")
    }
    if rc != 0 {
        close(fd)
        throw TestSupportError("connect to \(host):\(port) failed: errno \(errno)")
    }
    return fd
}

package func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
    var off = 0
    while off < bytes.count {
        let n = bytes[off...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { throw TestSupportError("send failed: errno \(errno)") }
        off += n
    }
}

/// `recv` into `buf`, retried when a signal interrupts it (with `SO_RCVTIMEO` set, Linux fails
/// an interrupted `recv` with EINTR even under `SA_RESTART`, signal(7)). Callers tell a receive
/// timeout (EAGAIN) from a closed connection instead of reading both as an empty reply.
/// - Returns: bytes received, 0 at end of stream, -1 on any other error (`errno` says which;
///   EAGAIN when the receive timeout passed).
package func receiveSome(_ fd: Int32, _ buf: inout [UInt8]) -> Int {
    while true {
        let n = recv(fd, &buf, buf.count, 0)
        if n < 0 && errno == EINTR { continue }
        return n
    }
}

package func parseResponse(_ data: [UInt8]) throws -> HTTPResponse {
    guard let end = findHeaderEnd(data) else { throw TestSupportError("no HTTP header in \(data.count) bytes") }
    let head = String(decoding: data[0..<end], as: UTF8.self)
    var lines = head.components(separatedBy: "\r\n")
    let statusLine = lines.removeFirst().split(separator: " ")
    guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw TestSupportError("bad status line") }
    var headers: [String: String] = [:]
    for line in lines {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    var body = Array(data[(end + 4)...])
    if headers["transfer-encoding"]?.lowercased().contains("chunked") == true { body = dechunk(body) }
    return HTTPResponse(status: status, headers: headers, body: body)
}

package func findHeaderEnd(_ data: [UInt8]) -> Int? {
    guard data.count >= 4 else { return nil }
    for i in 0...(data.count - 4) where data[i] == 13 && data[i + 1] == 10 && data[i + 2] == 13 && data[i + 3] == 10 {
        return i
    }
    return nil
}

package func dechunk(_ data: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var i = 0
    while i < data.count {
        guard let nl = data[i...].firstIndex(of: 10) else { break }
        let sizeText = String(decoding: data[i..<nl], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16), size > 0 else { break }
        let start = nl + 1
        guard start + size <= data.count else {
            out.append(contentsOf: data[start...])
            break
        }
        out.append(contentsOf: data[start..<(start + size)])
        i = start + size + 2
    }
    return out
}
