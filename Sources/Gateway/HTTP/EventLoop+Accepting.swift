// Accepting connections on the loop: every pending one at once, each counted against the
// connection limits (in all and per peer address) or refused with a fast 503, even when out of
// descriptors.

import CHTTPParser
import Foundation

extension EventLoop {
    func acceptAll() {
        while listenFD >= 0 {
            var addr = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept4(listenFD, $0, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
                }
            }
            if fd < 0 {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EMFILE, ENFILE:
                    // Out of descriptors: free the reserve, accept, refuse, take it back.
                    close(reserveFD)
                    let refused = accept4(listenFD, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
                    if refused >= 0 { refuse(refused) }
                    reserveFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
                    if refused < 0 { return }
                    continue
                default: return
                }
            }
            if connections.count >= configuration.maxConnections || stopDeadline != nil {
                refuse(fd)
                continue
            }
            let peer = Self.address(addr)
            let counted = !configuration.sharedPeers.contains(peer)
            if counted {
                let held = connectionsByPeer[peer, default: 0]
                guard held < configuration.maxConnectionsPerPeer else {
                    refuse(fd)
                    continue
                }
                connectionsByPeer[peer] = held + 1
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let c = Connection(id: nextID, fd: fd, peer: peer, loop: self, now: now)
            c.countedForPeer = counted
            nextID += 1
            connections[c.id] = c
            deadlinesChanged(c)
            server.connectionOpened()
            c.registeredEvents = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
            add(fd, id: c.id, events: c.registeredEvents)
        }
    }

    /// Answers a connection there is no room for with 503 and closes it.
    func refuse(_ fd: Int32) {
        let bytes = serialize(
            ServerAnswer(
                status: 503, code: .serverBusy, detail: "the gateway has no room for another connection; retry shortly"
            ).response, head: false, keepAlive: false)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
        close(fd)
        server.responder.serverAnswered(status: 503)
    }

    static func address(_ storage: sockaddr_storage) -> String {
        var s = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if Int32(s.ss_family) == AF_INET {
            withUnsafePointer(to: &s) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    var a = $0.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &a, &text, socklen_t(text.count))
                }
            }
        } else if Int32(s.ss_family) == AF_INET6 {
            withUnsafePointer(to: &s) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    var a = $0.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &a, &text, socklen_t(text.count))
                }
            }
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
