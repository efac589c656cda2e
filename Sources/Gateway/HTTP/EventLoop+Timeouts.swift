// Time on the loop: the once-a-second sweep of every connection's deadlines (first byte, request,
// idle, upload rate, write and stream progress, the stop deadline), and the graceful stop that
// sets that deadline.

import CHTTPParser
import Foundation

extension EventLoop {
    func sweep(at t: Int64) {
        trimHeapIfWorthIt()
        for c in Array(connections.values) {
            switch c.phase {
            case .reading where c.authorizingBytes != nil:
                break  // the credentials' check has its own deadline (the RPC timeout)
            case .reading:
                let limit = Int64(configuration.requestTimeoutSeconds) * 1000
                if c.reservedBodyBytes > 0, admission.minUploadBytesPerSecond > 0,
                    t - c.rateWindowStartMs >= admission.uploadRateWindowMs
                {
                    // An upload must keep a minimum rate, else it gives its share of the budget back.
                    if admission.isTooSlow(bytes: c.rateWindowBytes, elapsedMs: t - c.rateWindowStartMs) {
                        reject(
                            c, AdmissionPolicy.Refusal.uploadTooSlow(minBytesPerSecond: admission.minUploadBytesPerSecond).answer)
                        continue
                    }
                    c.rateWindowStartMs = t
                    c.rateWindowBytes = 0
                }
                if !c.receivedAny, t - c.lastActivityMs > Int64(configuration.firstByteTimeoutSeconds) * 1000 {
                    closeNow(c)  // not a byte since it connected
                } else if let started = c.requestStartedMs, c.receivingBody ? t - c.lastActivityMs > limit : t - started > limit {
                    reject(c, ServerAnswer(status: 408, code: "request_timeout", detail: "the request did not arrive in time"))
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
                if t - c.lastActivityMs > Int64(configuration.requestTimeoutSeconds) * 1000 { closeNow(c) }
            case .draining(let until):
                if t >= until { closeNow(c) }
            case .processing:
                if let deadline = stopDeadline, t >= deadline {
                    c.keepAlive = false
                    respond(c, ServerAnswer(status: 503, code: "service_unavailable", detail: "the gateway is stopping").response)
                }
            case .streaming:
                // Progress is what the client acknowledged (written less still queued in the
                // kernel); none for the write timeout while bytes wait, and it ends.
                var queued: Int32 = 0
                if ioctl(c.fd, UInt(TIOCOUTQ), &queued) != 0 { queued = 0 }
                let pending = c.output.count - c.outputOffset + Int(queued)
                let acknowledged = c.writtenTotal - Int(queued)
                if pending == 0 || acknowledged > c.acknowledgedAtCheck {
                    c.acknowledgedAtCheck = acknowledged
                    c.lastDrainMs = t
                } else if t - c.lastDrainMs > Int64(configuration.streamWriteTimeoutSeconds) * 1000 {
                    abort(c)
                }
            }
        }
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
