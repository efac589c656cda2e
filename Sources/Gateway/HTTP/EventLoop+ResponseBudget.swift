// The response budget (`maxResponseBufferBytes`): response bytes held by the connections, in all
// and per peer address, the connections waiting for room for their body's next chunk, and giving
// freed heap back to the system.

import Foundation

extension EventLoop {
    /// Holds `bytes` of the response budget for `c` if the total and its peer's share allow.
    func tryHold(_ c: Connection, _ bytes: Int) -> Bool {
        guard responseHeld + bytes <= configuration.maxResponseBufferBytes else { return false }
        if !configuration.sharedPeers.contains(c.peer) {
            guard responseHeldByPeer[c.peer, default: 0] + bytes <= configuration.maxResponseBufferBytesPerPeer else {
                return false
            }
        }
        hold(c, bytes)
        return true
    }

    /// Counts `bytes` against the response budget for `c`, room or not.
    func hold(_ c: Connection, _ bytes: Int) {
        guard bytes > 0 else { return }
        responseHeld += bytes
        responseHeldByPeer[c.peer, default: 0] += bytes
        c.heldBytes += bytes
        server.noteResponseBuffer(responseHeld)
    }

    /// Gives back what `c` holds of the response budget, and lets waiting connections take it.
    func releaseHeld(_ c: Connection) {
        guard c.heldBytes > 0 else { return }
        responseHeld -= c.heldBytes
        let left = responseHeldByPeer[c.peer, default: 0] - c.heldBytes
        responseHeldByPeer[c.peer] = left > 0 ? left : nil
        releasedSinceTrim += c.heldBytes
        c.heldBytes = 0
        server.noteResponseBuffer(responseHeld)
        serveBudgetWaiters()
    }

    /// Starts the next chunk of every waiting connection the budget now has room for, in the
    /// order they began to wait (one held back by its peer's share does not block the others).
    func serveBudgetWaiters() {
        guard !budgetWaiters.isEmpty else { return }
        let waiting = budgetWaiters
        budgetWaiters = []
        for id in waiting {
            guard let c = connections[id], c.waitingForBudget, case .sourcing(let source, let remaining) = c.phase else {
                continue
            }
            if tryHold(c, min(remaining, source.chunkLimit)) {
                c.waitingForBudget = false
                startChunk(c, source)
            } else {
                budgetWaiters.append(id)
            }
        }
    }

    /// Gives freed heap back to the system once a good deal of response memory has been
    /// released (glibc keeps freed memory otherwise): `malloc_trim(0)`, looked up at run time.
    func trimHeapIfWorthIt() {
        guard releasedSinceTrim >= 8 << 20 else { return }
        releasedSinceTrim = 0
        _ = Self.mallocTrim?(0)
    }

    static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()
}
