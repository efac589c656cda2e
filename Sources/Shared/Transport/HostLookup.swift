import CResolv
import Foundation
import Support

#if canImport(Glibc)
    import Glibc
#endif

/// Looks one host name up with `getaddrinfo(3)` (IPv4 addresses, as libzmq does for a socket
/// without ZMQ_IPV6) on short-lived threads of its own.
///
/// glibc's resolver waits `timeout` (5 s) for each query, tries it `attempts` (2) times, and does
/// that for each name it tries (with one search domain, `auth.dns.podman` and then `auth`), so a
/// DNS server that drops queries makes one lookup take 20 s, even if the server answers again a
/// moment later. Here each attempt waits at most `queryTimeoutS` per query and asks once per server
/// (set for its own thread only), and an attempt that has not answered is not waited for: the
/// owner starts another beside it (a new query, which a server that is back answers at once), at
/// most `maxInFlight` at a time, and takes the first result.
package final class HostLookup: Sendable {
    /// What one attempt found.
    package enum Outcome: Sendable, Equatable {
        /// The first IPv4 address of the name, as text (`10.89.0.3`).
        case address(String)
        /// `gai_strerror`'s text (`Name or service not known`, `Temporary failure in name resolution`).
        case failed(String)
    }

    package let host: String
    /// Most attempts running at once; a new one is refused while they all wait.
    package let maxInFlight: Int
    /// What an attempt runs: `HostLookup.resolve`, or a stand-in in tests.
    private let resolver: @Sendable (String) -> Outcome
    /// The longest an attempt waits for one DNS answer, in seconds (resolv.conf's `timeout`,
    /// lowered for the attempt's thread; a lower setting is kept).
    package static let queryTimeoutS: Int32 = 2
    private let notify: @Sendable () -> Void

    private struct State {
        /// Bumped by `reset()`: results of older attempts are ignored.
        var generation = 0
        var inFlight = 0
        var result: Outcome?
    }
    private let state = Locked(State())

    /// - Parameters:
    ///   - resolver: what an attempt runs (default `HostLookup.resolve`).
    ///   - notify: called (on the attempt's thread) when a result is ready to take.
    package init(
        host: String, maxInFlight: Int = 8, resolver: @escaping @Sendable (String) -> Outcome = HostLookup.resolve,
        notify: @escaping @Sendable () -> Void
    ) {
        self.host = host
        self.maxInFlight = maxInFlight
        self.resolver = resolver
        self.notify = notify
    }

    /// Attempts still running.
    package var inFlight: Int { state.withLock { $0.inFlight } }

    /// Starts an attempt on a thread of its own, unless `maxInFlight` are running.
    /// - Returns: whether one was started.
    @discardableResult
    package func startAttempt() -> Bool {
        let generation = state.withLock { s -> Int? in
            guard s.inFlight < maxInFlight else { return nil }
            s.inFlight += 1
            return s.generation
        }
        guard let generation else { return false }
        let host = self.host
        let thread = Thread { [self] in
            let outcome = resolver(host)
            let deliver = state.withLock { s -> Bool in
                s.inFlight -= 1
                guard s.generation == generation else { return false }
                // An address found replaces a failure not yet taken; the first address stays.
                if case .address? = s.result { return false }
                s.result = outcome
                return true
            }
            if deliver { notify() }
        }
        thread.name = "lookup.\(host)"
        thread.start()
        return true
    }

    /// The result of the attempts since the last call or `reset()`, if one finished.
    package func takeResult() -> Outcome? {
        state.withLock { s in
            defer { s.result = nil }
            return s.result
        }
    }

    /// Forgets the attempts still running: their results are dropped when they finish.
    package func reset() {
        state.withLock { s in
            s.generation += 1
            s.result = nil
        }
    }

    /// One blocking `getaddrinfo` call, with this thread's DNS waits capped (`queryTimeoutS`, one
    /// try per server).
    package static func resolve(_ host: String) -> Outcome {
        _ = insta_resolver_cap(queryTimeoutS, 1)
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &list)
        guard rc == 0 else { return .failed(String(cString: gai_strerror(rc))) }
        defer { freeaddrinfo(list) }
        var node = list
        while let entry = node?.pointee {
            if entry.ai_family == AF_INET, let address = entry.ai_addr {
                var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
                let ok = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var raw = sin.pointee.sin_addr
                    return inet_ntop(AF_INET, &raw, &text, socklen_t(text.count)) != nil
                }
                if ok {
                    return .address(
                        String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
                }
            }
            node = entry.ai_next
        }
        return .failed("no IPv4 address")
    }
}
