#if canImport(Glibc)
    import Glibc
#endif

/// A `tcp://host:port` endpoint a client socket connects to, split so that its host name can be
/// looked up outside libzmq (see `PeerConnector`).
struct TCPEndpoint: Sendable, Equatable {
    /// The host as written, without the brackets of an IPv6 literal.
    var host: String
    /// The port, digits only.
    var port: String

    /// Parses `tcp://host:port` and `tcp://[v6 address]:port`.
    /// - Returns: nil for any other transport (`inproc://`, `ipc://`), for libzmq's source-address
    ///   form (`tcp://source;host:port`), a wildcard host or a port that is not a number: those are
    ///   handed to libzmq as they are.
    init?(_ endpoint: String) {
        guard endpoint.hasPrefix("tcp://") else { return nil }
        let rest = endpoint.dropFirst("tcp://".count)
        guard !rest.contains(";"), let colon = rest.lastIndex(of: ":") else { return nil }
        var host = rest[..<colon]
        let port = rest[rest.index(after: colon)...]
        guard !port.isEmpty, port.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty, host != "*" else { return nil }
        self.host = String(host)
        self.port = String(port)
    }

    /// Whether the host is an IPv4 or IPv6 address literal, which needs no lookup.
    var hostIsAddress: Bool { Self.isAddress(host) }

    /// The endpoint with `address` (an address literal) in place of the host.
    func endpoint(address: String) -> String {
        address.contains(":") ? "tcp://[\(address)]:\(port)" : "tcp://\(address):\(port)"
    }

    static func isAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}
