// Time on the loop: each connection's deadlines (first byte, request, idle, upload rate, write
// and stream progress) in a heap of looks, so a turn touches only the connections whose next
// deadline has come, and the graceful stop, whose deadline every connection is checked against.

import CHTTPParser
import Foundation

extension EventLoop {
    /// Looks at every connection whose next look is due at `t` (Unix ms), in deadline order,
    /// and schedules each one's next.
    func checkDue(at t: Int64) {
        while let (due, id) = checks.earliest, due <= t {
            checks.removeEarliest()
            // Stale: closed, or its look was moved earlier (this entry is the later one).
            guard let c = connections[id], c.checkAtMs == due else { continue }
            c.checkAtMs = .max
            check(c, at: t)
            deadlinesChanged(c)
        }
    }

    /// While stopping: every connection, on every turn, against the stop deadline too.
    func checkAll(at t: Int64) {
        for c in Array(connections.values) { check(c, at: t) }
    }

    /// Moves the connection's next look earlier when what it now waits for is due before the
    /// look already scheduled. A deadline that moved later is found at that look, which then
    /// schedules the next: activity (a read, a write) costs no heap work.
    func deadlinesChanged(_ c: Connection) {
        guard !c.closed else { return }
        let due = nextDeadlineMs(c)
        guard due < c.checkAtMs else { return }
        c.checkAtMs = due
        checks.insert(c.id, deadline: due)
    }

    /// When the connection's state next needs a look (Unix ms), `Int64.max` for never: the
    /// earliest deadline it is under now. The rules are those `check(_:at:)` applies.
    func nextDeadlineMs(_ c: Connection) -> Int64 {
        let request = Int64(configuration.requestTimeoutSeconds) * 1000
        switch c.phase {
        case .reading where c.authorizingBytes != nil:
            return .max  // the credentials' check has its own deadline (the RPC timeout)
        case .reading:
            var due: Int64
            if !c.receivedAny {
                due = c.lastActivityMs + Int64(configuration.firstByteTimeoutSeconds) * 1000
            } else if let started = c.requestStartedMs {
                due = (c.receivingBody ? c.lastActivityMs : started) + request
            } else {
                due = c.lastActivityMs + Int64(configuration.idleTimeoutSeconds) * 1000
            }
            if c.reservedBodyBytes > 0, admission.minUploadBytesPerSecond > 0 {
                due = min(due, c.rateWindowStartMs + admission.uploadRateWindowMs)
            }
            return due + 1  // a timeout is passed once it is exceeded
        case .sourcing where c.chunkPending || c.waitingForBudget:
            return .max  // waiting on the gateway's side; its chunk restarts the clock
        case .writing, .sourcing:
            return c.lastActivityMs + request + 1
        case .draining(let until):
            return until
        case .processing:
            return .max  // the handler's own deadlines (the RPC timeouts) end it
        case .streaming:
            return c.streamCheckDueMs
        }
    }

    /// Applies the connection's deadlines at `t` (Unix ms): closes, refuses or aborts it when
    /// one has passed.
    func check(_ c: Connection, at t: Int64) {
        server.countCheck()
        switch c.phase {
        case .reading where c.authorizingBytes != nil:
            break
        case .reading:
            let limit = Int64(configuration.requestTimeoutSeconds) * 1000
            if c.reservedBodyBytes > 0, admission.minUploadBytesPerSecond > 0,
                t - c.rateWindowStartMs >= admission.uploadRateWindowMs
            {
                // An upload must keep a minimum rate, else it gives its share of the budget back.
                if admission.isTooSlow(bytes: c.rateWindowBytes, elapsedMs: t - c.rateWindowStartMs) {
                    reject(c, AdmissionPolicy.Refusal.uploadTooSlow(minBytesPerSecond: admission.minUploadBytesPerSecond).answer)
                    return
                }
                c.rateWindowStartMs = t
                c.rateWindowBytes = 0
            }
            if !c.receivedAny, t - c.lastActivityMs > Int64(configuration.firstByteTimeoutSeconds) * 1000 {
                closeNow(c)  // not a byte since it connected
            } else if let started = c.requestStartedMs, c.receivingBody ? t - c.lastActivityMs > limit : t - started > limit {
                reject(c, ServerAnswer(status: 408, code: .requestTimeout, detail: "the request did not arrive in time"))
            } else if c.requestStartedMs == nil
                && (t - c.lastActivityMs > Int64(configuration.idleTimeoutSeconds) * 1000 || stopDeadline != nil)
            {
                closeNow(c)
            } else if let deadline = stopDeadline, t >= deadline {
                closeNow(c)
            }
        case .sourcing where c.chunkPending || c.waitingForBudget:
            c.lastActivityMs = t  // waiting on the gateway's side (a chunk, or room), not the client's
        case .writing, .sourcing:
            // No write for the timeout: the kernel's queue for the client is full. A client that
            // took some of it since the last sample is slow, not gone, and keeps its answer; one
            // that took none is reset, so the kernel frees what it still queues for it at once
            // (a close would leave it in an orphaned socket for minutes).
            if t - c.lastActivityMs > Int64(configuration.requestTimeoutSeconds) * 1000 {
                if acknowledgedSinceLastSample(c) { c.lastActivityMs = t } else { abort(c) }
            }
        case .draining(let until):
            if t >= until { closeNow(c) }
        case .processing:
            if let deadline = stopDeadline, t >= deadline {
                c.keepAlive = false
                respond(c, ServerAnswer(status: 503, code: .serviceUnavailable, detail: "the gateway is stopping").response)
            }
        case .streaming:
            checkStream(c, at: t)
        }
    }

    /// A stream's progress is what its client acknowledged (written less still queued in the
    /// kernel), sampled once a second while a stream is watched, as the sweep sampled it. A
    /// stream is watched only while bytes may wait: from a write after it had everything
    /// (`armStreamWatch`) until a look finds nothing waiting. While bytes wait and none are
    /// acknowledged between looks for `streamWriteTimeoutSeconds` (timed from that write, or
    /// from the last look that saw progress), it ends, within a second of the timeout. An idle
    /// stream costs no look; one that receives events costs about one look per event that
    /// finds it idle.
    func checkStream(_ c: Connection, at t: Int64) {
        var queued: Int32 = 0
        if ioctl(c.fd, UInt(TIOCOUTQ), &queued) != 0 { queued = 0 }
        let pending = c.output.count - c.outputOffset + Int(queued)
        let acknowledged = c.writtenTotal - Int(queued)
        defer { c.acknowledgedAtCheck = acknowledged }
        if pending == 0 {
            c.streamCheckDueMs = .max  // nothing waits: the next write watches it again
            return
        }
        if acknowledged > c.acknowledgedAtCheck {
            c.lastDrainMs = t
        } else if t - c.lastDrainMs > Int64(configuration.streamWriteTimeoutSeconds) * 1000 {
            abort(c)
            return
        }
        c.streamCheckDueMs = t + 1_000
    }

    /// An answer's write filled the kernel's queue: samples what its client has acknowledged
    /// so far, the base of `acknowledgedSinceLastSample` at the write timeout. (A stream samples
    /// at its own looks.)
    func sampleAcknowledged(_ c: Connection) {
        if case .streaming = c.phase { return }
        var queued: Int32 = 0
        if ioctl(c.fd, UInt(TIOCOUTQ), &queued) == 0 { c.acknowledgedAtCheck = c.writtenTotal - Int(queued) }
    }

    /// Whether the client acknowledged bytes since `acknowledgedAtCheck` was sampled (at a write
    /// that filled the kernel's queue, or at the last look); samples it again.
    func acknowledgedSinceLastSample(_ c: Connection) -> Bool {
        var queued: Int32 = 0
        guard ioctl(c.fd, UInt(TIOCOUTQ), &queued) == 0 else { return false }
        let acknowledged = c.writtenTotal - Int(queued)
        defer { c.acknowledgedAtCheck = acknowledged }
        return acknowledged > c.acknowledgedAtCheck
    }

    /// Bytes are being written to a stream: unless it is watched already, a stall is timed from
    /// now and its progress looked at a second from now. Progress counts from what was written
    /// so far: the last look found all of it acknowledged, and nothing was written since.
    func armStreamWatch(_ c: Connection) {
        guard c.streamCheckDueMs == .max else { return }
        c.acknowledgedAtCheck = c.writtenTotal
        c.lastDrainMs = now
        c.streamCheckDueMs = c.lastDrainMs + 1_000
        deadlinesChanged(c)
    }

    func beginStop() {
        guard stopDeadline == nil else { return }
        stopDeadline = now + 700
        epoll_ctl(epfd, EPOLL_CTL_DEL, listenFD, nil)
        close(listenFD)
        listenFD = -1
        for c in Array(connections.values) {
            c.keepAlive = false
            if case .streaming(let stream) = c.phase { stream.close() }
        }
    }
}
