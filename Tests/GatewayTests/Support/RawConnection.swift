import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A client socket for HTTP tests that must send exactly the bytes they mean (malformed
/// framing, pipelining, early closes): no library between the test and the wire.
final class RawConnection: @unchecked Sendable {
    // @unchecked: used by one test at a time; the descriptor is the only state.
    let fd: Int32

    /// Connects to 127.0.0.1:`port`; reads give up after `timeoutSeconds` of silence.
    init(port: Int, timeoutSeconds: Int = 30) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw RawError(message: "connect failed: errno \(errno)")
        }
    }

    deinit { close(fd) }

    struct RawError: Error {
        var message: String
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw RawError(message: "send failed: errno \(errno)") }
            off += n
        }
    }

    /// Everything the server sends until it closes the connection (or the read times out).
    func readToEnd() -> [UInt8] {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = recv(fd, &buf, buf.count, 0)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return out }
            out += buf[0..<n]
        }
    }

    /// Reads until `count` whole responses have arrived (Content-Length framed), or the
    /// connection closes or times out.
    func readResponses(_ count: Int) -> [RawResponse] {
        var data: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65_536)
        while true {
            let parsed = RawResponse.parseAll(data)
            if parsed.count >= count { return parsed }
            let n = recv(fd, &buf, buf.count, 0)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return parsed }
            data += buf[0..<n]
        }
    }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }
}

/// One response as read off the wire.
struct RawResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    /// The whole responses in `data`, in order (1xx interim responses included).
    static func parseAll(_ data: [UInt8]) -> [RawResponse] {
        var out: [RawResponse] = []
        var i = 0
        while i < data.count {
            guard let end = findEnd(data, from: i) else { break }
            let head = String(decoding: data[i..<end], as: UTF8.self).components(separatedBy: "\r\n")
            let statusParts = head[0].split(separator: " ")
            guard statusParts.count >= 2, let status = Int(statusParts[1]) else { break }
            var headers: [(String, String)] = []
            for line in head.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
            let length = Int(headers.first { $0.0.lowercased() == "content-length" }?.1 ?? "0") ?? 0
            let bodyStart = end + 4
            let isHeadReply = status < 200 || status == 204 || status == 304
            let bodyLength = isHeadReply ? 0 : length
            guard bodyStart + bodyLength <= data.count else { break }
            out.append(RawResponse(status: status, headers: headers, body: Array(data[bodyStart..<(bodyStart + bodyLength)])))
            i = bodyStart + bodyLength
        }
        return out
    }

    private static func findEnd(_ data: [UInt8], from start: Int) -> Int? {
        guard data.count - start >= 4 else { return nil }
        for i in start...(data.count - 4) where data[i] == 13 && data[i + 1] == 10 && data[i + 2] == 13 && data[i + 3] == 10 {
            return i
        }
        return nil
    }
}
