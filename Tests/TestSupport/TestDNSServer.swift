import Foundation
import Harness
import Support

#if canImport(Glibc)
    import Glibc
#endif

/// A DNS server for tests that control a service's name lookups: UDP on port 53 of a random
/// 127.x.y.z address, answering A queries (RFC 1035) for the hosts it was given, and leaving the
/// queries for a host unanswered while it is held, as podman's aardvark-dns did for a restarted
/// container (deploy/README.md).
///
/// A service uses it when started through `launcher(resolvConf:)`: in a mount namespace of its
/// own whose `/etc/resolv.conf` is `resolvConf(in:)`, so nothing outside that process sees it.
/// Port 53 and the mount namespace need root: see `isAvailable`.
public final class TestDNSServer: Sendable {
    /// The address it listens on (port 53).
    public let address: String
    /// The search domain its resolv.conf names; hosts are looked up as `<host>.<zone>`.
    public let zone: String
    private let fd: Int32
    private let stopped = Locked(false)
    private struct Zone {
        var records: [String: String] = [:]
        var held: Set<String> = []
        var heldQueries: [String: Int] = [:]
        var answered: [String: Int] = [:]
    }
    private let state = Locked(Zone())

    /// Whether this process can run the server and the launcher: root (port 53, mount
    /// namespaces) and `unshare(1)`.
    public static let isAvailable: Bool = {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: unshare) else { return false }
        guard let probe = try? ChildProcess(unshare, ["--mount", "--", "/bin/true"]) else { return false }
        return probe.waitUntilExit() == .exited(0)
    }()

    static let unshare = "/usr/bin/unshare"

    /// Binds a random 127.x.y.z:53 and starts answering.
    /// - Throws: `TestSupportError` when no address could be bound (not root?).
    public init(zone: String = "insta-test.internal") throws {
        self.zone = zone
        var bound: (fd: Int32, address: String)?
        for _ in 0..<20 where bound == nil {
            let candidate = "127.53.\(Int.random(in: 1...254)).\(Int.random(in: 1...254))"
            let s = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            guard s >= 0 else { break }
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = in_port_t(53).bigEndian
            inet_pton(AF_INET, candidate, &sin.sin_addr)
            let rc = withUnsafePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if rc == 0 { bound = (s, candidate) } else { close(s) }
        }
        guard let bound else { throw TestSupportError("cannot bind UDP port 53 on 127.53.x.y (errno \(errno))") }
        fd = bound.fd
        address = bound.address
        let thread = Thread { [self] in serve() }
        thread.name = "test-dns"
        thread.start()
    }

    /// Answers `<host>.<zone>` with `ipv4`.
    public func add(_ host: String, address ipv4: String) {
        state.withLock { $0.records["\(host).\(zone)".lowercased()] = ipv4 }
    }

    /// Leaves every query for `host` (with or without the zone) unanswered until `release`.
    public func hold(_ host: String) { state.withLock { _ = $0.held.insert(host.lowercased()) } }

    /// Answers `host` again (new queries; the held ones stay unanswered, as lost packets would).
    public func release(_ host: String) { state.withLock { _ = $0.held.remove(host.lowercased()) } }

    /// Queries for `host` received while it was held.
    public func heldQueries(_ host: String) -> Int { state.withLock { $0.heldQueries[host.lowercased(), default: 0] } }

    /// Queries for `host` answered with its address.
    public func answeredQueries(_ host: String) -> Int { state.withLock { $0.answered[host.lowercased(), default: 0] } }

    /// Writes a resolv.conf naming this server and the zone as the search domain, with glibc's
    /// default timeouts (5 s per query, 2 attempts), like a container's under podman.
    /// - Returns: its path.
    public func resolvConf(in directory: String) throws -> String {
        let path = "\(directory)/resolv.conf"
        try "search \(zone)\nnameserver \(address)\n".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The command that runs an executable (appended) with `resolvConf` as its /etc/resolv.conf,
    /// in a mount namespace of its own (`ServiceProcess.launcher`).
    public static func launcher(resolvConf: String) -> [String] {
        [unshare, "--mount", "--", "/bin/sh", "-c", "mount --bind \"$1\" /etc/resolv.conf && exec \"$2\"", "sh", resolvConf]
    }

    public func stop() { stopped.withLock { $0 = true } }

    deinit { close(fd) }

    // MARK: Serving

    private func serve() {
        var buffer = [UInt8](repeating: 0, count: 1_500)
        while !stopped.withLock({ $0 }) {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            var peer = sockaddr_storage()
            var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let n = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &peerLength) }
            }
            guard n > 12, let reply = answer(Array(buffer[0..<n])) else { continue }
            _ = withUnsafePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, reply, reply.count, 0, $0, peerLength) }
            }
        }
    }

    /// The reply to one query message, or nil to leave it unanswered.
    private func answer(_ query: [UInt8]) -> [UInt8]? {
        // Header (12 bytes), then one question: labels, type, class.
        var labels: [String] = []
        var i = 12
        while i < query.count, query[i] != 0 {
            let length = Int(query[i])
            guard length < 64, i + 1 + length <= query.count else { return nil }
            labels.append(String(decoding: query[(i + 1)..<(i + 1 + length)], as: UTF8.self).lowercased())
            i += 1 + length
        }
        guard i + 5 <= query.count, let first = labels.first else { return nil }
        let type = UInt16(query[i + 1]) << 8 | UInt16(query[i + 2])
        let question = Array(query[12..<(i + 5)])
        let name = labels.joined(separator: ".")
        let record = state.withLock { s -> String?? in
            if s.held.contains(first) {
                s.heldQueries[first, default: 0] += 1
                return .none
            }
            let found = s.records[name]
            if found != nil && type == 1 { s.answered[first, default: 0] += 1 }
            return .some(found)
        }
        guard let record else { return nil }  // held
        // Flags: response, recursion desired and available; NXDOMAIN for names it does not know.
        var reply = Array(query[0..<2]) + [0x81, record == nil ? 0x83 : 0x80]
        let answers: UInt16 = (record != nil && type == 1) ? 1 : 0
        reply += [0, 1, 0, UInt8(answers), 0, 0, 0, 0] + question
        if let record, type == 1 {
            var address = in_addr()
            inet_pton(AF_INET, record, &address)
            let bytes = withUnsafeBytes(of: address.s_addr) { Array($0) }
            // Name (pointer to the question), type A, class IN, TTL 0, 4 bytes of address.
            reply += [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4] + bytes
        }
        return reply
    }
}
