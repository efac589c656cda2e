// Streaming bodies on the loop: a `BodySource` body fetched one chunk at a time within the
// response budget, and a Server-Sent Events stream (`EventStream`) written as it fills.

extension EventLoop {
    /// The body's next chunk, once the response budget has room for it: at once, or when
    /// bytes held by others are released (the connection waits in `budgetWaiters`).
    func requestChunk(_ c: Connection, _ source: BodySource, remaining: Int) {
        guard !c.chunkPending, !c.waitingForBudget else { return }
        if tryHold(c, min(remaining, source.chunkLimit)) {
            startChunk(c, source)
        } else {
            c.waitingForBudget = true
            budgetWaiters.append(c.id)
        }
    }

    /// Asks the body's source for its next chunk (one at a time per connection); its room in the
    /// budget is already held.
    func startChunk(_ c: Connection, _ source: BodySource) {
        guard !c.chunkPending else { return }
        c.chunkPending = true
        let server = self.server
        let id = c.id
        Task {
            let bytes = try? await source.next()
            server.post(.chunk(id, bytes ?? nil))
        }
    }

    /// Writes what the stream has buffered; closes the connection once the stream is closed and sent.
    func pull(_ c: Connection) {
        guard case .streaming(let stream) = c.phase else { return }
        let (bytes, closed) = stream.take()
        if !bytes.isEmpty {
            c.output = bytes
            c.outputOffset = 0
            flush(c)
            return
        }
        if closed { lingeringClose(c) }
    }
}
