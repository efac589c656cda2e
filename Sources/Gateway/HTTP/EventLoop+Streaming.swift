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

    /// The next chunk of a `BodySource` body has come (nil: it failed): it is written (after the
    /// head, with the first chunk). A chunk that is missing, empty or would overrun the length
    /// makes the answer a 503 while none of it is sent, else ends the connection.
    func sourceChunkArrived(_ c: Connection, _ source: BodySource, remaining: Int, _ bytes: [UInt8]?) {
        c.chunkPending = false
        guard let bytes, !bytes.isEmpty, bytes.count <= remaining, !c.peerClosed else {
            if c.pendingHead != nil, !c.peerClosed {
                // Nothing of the answer is sent yet: it becomes a 503, never a short 200.
                c.pendingHead = nil
                releaseHeld(c)
                server.responder.serverAnswered(status: 503)
                respond(c, Problem.serviceUnavailable("the body could not be read; retry shortly").response)
            } else {
                closeNow(c)  // the client went away, or the body cannot be finished
            }
            return
        }
        let left = remaining - bytes.count
        c.lastActivityMs = now
        c.phase = left == 0 ? .writing(thenClose: !c.keepAlive) : .sourcing(source, remaining: left)
        if bytes.count > c.heldBytes { hold(c, bytes.count - c.heldBytes) }
        if let head = c.pendingHead {
            c.pendingHead = nil
            c.output = head
            c.output.append(contentsOf: bytes)
        } else {
            c.output = bytes
        }
        c.outputOffset = 0
        flush(c)
    }

    /// Asks the body's source for its next chunk (one at a time per connection), as a task on
    /// the loop's executor; its room in the budget is already held.
    func startChunk(_ c: Connection, _ source: BodySource) {
        guard !c.chunkPending else { return }
        c.chunkPending = true
        let server = self.server
        let id = c.id
        Task(executorPreference: server.executor) {
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
            armStreamWatch(c)
            flush(c)
            return
        }
        if closed { lingeringClose(c) }
    }
}
