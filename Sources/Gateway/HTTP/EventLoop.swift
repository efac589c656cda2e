// The HTTP server's event loop: the epoll loop thread, reading from connections, handing whole
// requests to their handlers and taking messages back, and closing connections. Accepting is in
// EventLoop+Accepting.swift, connection deadlines and the stop in EventLoop+Timeouts.swift,
// framing in EventLoop+Framing.swift, response writing in EventLoop+Writing.swift, streaming
// bodies in EventLoop+Streaming.swift, the response budget in EventLoop+ResponseBudget.swift and
// the upload admission in EventLoop+Admission.swift.

import CHTTPParser
import Foundation
import ServiceKit
import Support
import Transport
import Wire

/// The loop: the listening socket, every connection and the http-parser callbacks, all on one
/// thread (`http.loop`). Nothing here is touched from another thread; other threads talk to it
/// through `HTTPServer.post`.
final class EventLoop: @unchecked Sendable {
    // @unchecked: created on the starting thread, then used only by the loop thread it is handed to.
    let server: HTTPServer
    let configuration: HTTPServer.Configuration
    /// What request bodies are let in, and how fast an upload must arrive.
    let admission: AdmissionPolicy
    let epfd: Int32
    var listenFD: Int32
    /// Kept open so that, out of descriptors, the loop can still accept and refuse (503).
    var reserveFD: Int32
    var connections: [UInt64: Connection] = [:]
    /// Open connections per peer address (peers in `sharedPeers` are not counted).
    var connectionsByPeer: [String: Int] = [:]
    var nextID: UInt64 = 2  // 0: the listening socket, 1: the wake eventfd
    let settings: UnsafeMutablePointer<http_parser_settings>
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    var stopDeadline: Int64?
    /// Response bytes held (see `maxResponseBufferBytes`): in all, and per peer address.
    var responseHeld = 0
    var responseHeldByPeer: [String: Int] = [:]
    /// Connections waiting for room in the response budget for their body's next chunk, in order.
    var budgetWaiters: [UInt64] = []
    /// Response bytes released since the heap was last trimmed.
    var releasedSinceTrim = 0
    var dateSecond: Int64 = 0
    var dateHeader = ""
    /// The RPC clients' socket sides this loop drives (`HTTPServer.drive`). Pump k's DEALERs are
    /// watched under the epoll id `firstPumpID + 2k`, its monitor sockets under `+ 2k + 1`.
    var pumps: [RPCPump] = []
    /// When each connection is next looked at for its deadlines (`Connection.checkAtMs`), by id;
    /// entries of closed connections and moved looks are skipped as they come up.
    var checks = DeadlineHeap<UInt64>()
    static let firstPumpID: UInt64 = 1 << 62

    init(server: HTTPServer, listenFD: Int32) throws {
        self.server = server
        self.configuration = server.configuration
        self.admission = AdmissionPolicy(server.configuration)
        self.listenFD = listenFD
        epfd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epfd >= 0 else { throw ServerError(message: "epoll_create1 failed: errno \(errno)") }
        reserveFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
        settings = .allocate(capacity: 1)
        settings.initialize(to: http_parser_settings())
        Self.installCallbacks(settings)
        http_parser_set_max_header_size(UInt32(configuration.maxHeaderBytes + configuration.maxTargetBytes))
        add(listenFD, id: 0, events: EPOLLIN.rawValue)
        add(server.wakeDescriptor, id: 1, events: EPOLLIN.rawValue)
    }

    func add(_ fd: Int32, id: UInt64, events: UInt32) {
        var event = epoll_event(events: events, data: epoll_data_t(u64: id))
        epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event)
    }

    func modify(_ c: Connection) {
        // Once the peer's half-close is seen, RDHUP is no longer asked for: it is level-triggered
        // and would wake the loop again and again until the response is written.
        var events = c.peerClosed ? 0 : EPOLLRDHUP.rawValue
        if c.wantsRead { events |= EPOLLIN.rawValue }
        if c.wantsWrite { events |= EPOLLOUT.rawValue }
        guard events != c.registeredEvents else { return }
        c.registeredEvents = events
        var event = epoll_event(events: events, data: epoll_data_t(u64: c.id))
        epoll_ctl(epfd, EPOLL_CTL_MOD, c.fd, &event)
    }

    var now: Int64 { Timestamp.nowMs() }

    func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        var nextTrim = now + 1_000
        server.executor.bind()
        startPumps()
        var pumpFired = [Bool](repeating: false, count: pumps.count)
        while true {
            let n = epoll_wait(epfd, &events, Int32(events.count), waitMs())
            if n < 0 && errno != EINTR { break }
            for i in 0..<max(0, Int(n)) {
                let id = events[i].data.u64
                let flags = events[i].events
                if id >= Self.firstPumpID {
                    let k = Int((id - Self.firstPumpID) / 2)
                    pumpFired[k] = true
                    if (id - Self.firstPumpID) % 2 == 1 { pumps[k].monitorsSignalled() }
                } else if id == 0 {
                    acceptAll()
                } else if id == 1 {
                    server.drainWake()
                    // Also what a pump's host-name lookup signals when it has an answer.
                    for k in pumpFired.indices { pumpFired[k] = true }
                } else if let c = connections[id] {
                    handle(c, flags: flags)
                }
            }
            // Replies first (their callers resume below), then the handlers started by the
            // requests read above and those whose awaits resumed, then what they sent, in this
            // same turn; what the handlers post is delivered just below.
            let t0 = now
            for (k, pump) in pumps.enumerated()
            where pumpFired[k] || pump.wantsTurn || pump.dueMs.map({ t0 >= $0 }) == true {
                pumpFired[k] = false
                turn(pump)
            }
            server.executor.runPending()
            for pump in pumps where pump.wantsTurn { turn(pump) }
            for message in server.takeMessages() { deliver(message) }
            let t = now
            if stopDeadline != nil { checkAll(at: t) }
            checkDue(at: t)
            if t >= nextTrim {
                trimHeapIfWorthIt()
                nextTrim = t + 1_000
            }
            if let deadline = stopDeadline, connections.isEmpty || t >= deadline + 300 { break }
        }
        for c in Array(connections.values) { closeNow(c) }
        for pump in pumps { pump.close() }
        server.executor.stop()
        if listenFD >= 0 { close(listenFD) }
        close(reserveFD)
        close(epfd)
        settings.deallocate()
        readBuffer.deallocate()
    }

    /// How long epoll may wait: not at all while jobs wait, else until the earliest connection
    /// deadline, RPC deadline or host-name lookup of a driven pump, at most 250 ms.
    func waitMs() -> Int32 {
        // A message the loop posted to itself after it took its mailbox (a stream attached
        // during delivery) is taken at once.
        if server.executor.hasPending || server.hasMessages { return 0 }
        var due = checks.earliest?.deadline ?? .max
        for pump in pumps { if let d = pump.dueMs { due = min(due, d) } }
        guard due != .max else { return 250 }
        return Int32(max(0, min(250, due - now)))
    }

    /// Takes the driven clients' pumps and watches their descriptors.
    func startPumps() {
        for client in server.drivenClients.withLock({ $0 }) {
            guard let pump = client.takePump() else { continue }
            do {
                // Pump k: its DEALERs under id firstPumpID + 2k, its monitors under + 2k + 1.
                let id = Self.firstPumpID + 2 * UInt64(pumps.count)
                let fds = try pump.fileDescriptors()
                for fd in fds.dealers { add(fd, id: id, events: EPOLLIN.rawValue) }
                for fd in fds.monitors { add(fd, id: id + 1, events: EPOLLIN.rawValue) }
                pumps.append(pump)
            } catch {
                server.logger.error("rpc.pump_failed", metadata: ["service": client.service, "error": "\(error)"])
                pump.close()
            }
        }
    }

    /// Turns one pump; a pump whose context is gone fails its calls (the process is stopping).
    func turn(_ pump: RPCPump) {
        do { try pump.turn(waiting: false) } catch {
            let stopping: Bool
            if case ZMQError.contextTerminated = error { stopping = true } else { stopping = false }
            if !stopping { server.logger.error("rpc.loop_failed", metadata: ["error": "\(error)"]) }
            pump.close()
        }
    }

    // MARK: Events

    func handle(_ c: Connection, flags: UInt32) {
        if flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 {
            closeNow(c)
            return
        }
        if flags & EPOLLIN.rawValue != 0 || flags & EPOLLRDHUP.rawValue != 0 { readable(c) }
        if connections[c.id] != nil, flags & EPOLLOUT.rawValue != 0 { flush(c) }
    }

    func readable(_ c: Connection) {
        while connections[c.id] != nil {
            let n = recv(c.fd, readBuffer.baseAddress, readBuffer.count, 0)
            if n > 0 {
                c.lastActivityMs = now
                c.receivedAny = true
                received(c, UnsafeRawBufferPointer(rebasing: readBuffer[0..<n]))
                if !c.wantsRead { return }
                if n < readBuffer.count { return }
            } else if n == 0 {
                // The client closed (or half-closed) its side. The requests already received
                // (this one and any pipelined behind it) are still answered, then the
                // connection closes; anything else (an idle connection, a partial request, a
                // stream) ends now.
                switch c.phase {
                case .processing, .writing, .sourcing:
                    c.peerClosed = true
                    c.wantsRead = false
                    modify(c)
                default:
                    closeNow(c)
                }
                return
            } else {
                if errno == EINTR { continue }
                if errno != EAGAIN && errno != EWOULDBLOCK { closeNow(c) }
                return
            }
        }
    }

    func received(_ c: Connection, _ bytes: UnsafeRawBufferPointer) {
        switch c.phase {
        case .reading where c.authorizingBytes != nil:
            c.input.append(contentsOf: bytes)  // the upload's body waits for its credentials' check
        case .reading:
            if c.input.isEmpty {
                parse(c, bytes)
            } else {
                c.input.append(contentsOf: bytes)
                let pending = c.input
                c.input = []
                pending.withUnsafeBytes { parse(c, $0) }
            }
        case .processing, .writing, .sourcing:
            // The next request, pipelined: kept unparsed (bounded) until this one is answered.
            c.input.append(contentsOf: bytes)
            if c.input.count > 64 * 1024 {
                c.wantsRead = false
                modify(c)
            }
        case .streaming, .draining:
            break  // nothing a client sends on a stream (or after an error) is read
        }
    }

    /// A whole request has arrived: hand it to the router as a task.
    func dispatch(_ c: Connection) {
        c.phase = .processing
        c.requestStartedMs = nil
        let (request, respond) = c.takeRequest()
        let id = c.id
        let server = self.server
        let reserved = c.reservedBodyBytes
        let peer = c.peer
        c.reservedBodyBytes = 0
        Task(executorPreference: server.executor) {
            // Routed when the head arrived (`HTTPResponder.route`); a connection always has its
            // route by now, as the loop dispatches only requests whose head it parsed.
            let response = await respond?(request) ?? Problem.internalError().response
            server.releaseLargeBody(reserved, peer: peer)  // the body went with the request
            server.post(.respond(id, response))
        }
    }

    func deliver(_ message: HTTPServer.Message) {
        switch message {
        case .respond(let id, let response):
            guard let c = connections[id], case .processing = c.phase else {
                // The client went away before the answer: a stream must not stay registered.
                if case .stream(let stream) = response.body { stream.finished() }
                return
            }
            if c.peerClosed, case .stream(let stream) = response.body {
                stream.finished()
                closeNow(c)
                return
            }
            respond(c, response)
        case .authorized(let id, let refusal):
            if let c = connections[id], case .reading = c.phase { authorized(c, refusal: refusal) }
        case .streamReady(let id):
            if let c = connections[id], case .streaming = c.phase, c.output.isEmpty { pull(c) }
        case .chunk(let id, let bytes):
            guard let c = connections[id], case .sourcing(let source, let remaining) = c.phase else { return }
            sourceChunkArrived(c, source, remaining: remaining, bytes)
        case .stop:
            beginStop()
        }
    }

    /// Ends the connection after an answer: no more writes, and what the client still sends is
    /// read and dropped for a moment (so the answer is not lost to a reset), then closed.
    func lingeringClose(_ c: Connection) {
        shutdown(c.fd, Int32(SHUT_WR))
        c.phase = .draining(until: now + 2_000)
        c.input = []
        if !c.wantsRead {
            c.wantsRead = true
            modify(c)
        }
    }

    /// Closes with a reset (`SO_LINGER` 0), so what the kernel still queues for a client that
    /// stopped reading is freed at once instead of lingering in an orphaned socket.
    func abort(_ c: Connection) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        closeNow(c)
    }

    func closeNow(_ c: Connection) {
        guard connections.removeValue(forKey: c.id) != nil else { return }
        c.closed = true
        server.releaseLargeBody(c.reservedBodyBytes, peer: c.peer)
        c.reservedBodyBytes = 0
        c.output = []
        c.pendingHead = nil
        releaseHeld(c)
        if c.countedForPeer, let held = connectionsByPeer[c.peer] {
            connectionsByPeer[c.peer] = held > 1 ? held - 1 : nil
        }
        epoll_ctl(epfd, EPOLL_CTL_DEL, c.fd, nil)
        close(c.fd)
        server.connectionClosed()
        if case .streaming(let stream) = c.phase { stream.finished() }
        c.release()
    }
}
