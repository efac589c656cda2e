// Upload admission on the loop: an upload's credentials are checked off the loop before it takes
// any of the upload budget, then its share is reserved and its body read (or it is refused).
// What is an upload and what it must carry is `AdmissionPolicy`'s; the budget is `UploadBudget`.

import CHTTPParser

extension EventLoop {
    /// Checks an upload's credentials as a task on the loop's executor (its call to AuthService
    /// goes through the loop's own client, and nothing waits for a pool thread); the answer
    /// comes back as `.authorized`.
    func authorize(_ c: Connection, _ declared: Int) {
        let server = self.server
        let id = c.id
        let headers = HTTPHeaders(fields: c.headers)
        Task(executorPreference: server.executor) {
            server.post(.authorized(id, await server.responder.authorizeUpload(headers)))
        }
    }

    /// An upload's credentials were checked: refuse it, or take its share of the budget and
    /// read its body.
    func authorized(_ c: Connection, refusal: Problem?) {
        guard let declared = c.authorizingBytes else { return }
        c.authorizingBytes = nil
        // Only a 100 Continue can be waiting here, and a refused upload must not get it.
        let interim = c.output
        c.output = []
        c.outputOffset = 0
        if let refusal {
            reject(c, ServerAnswer(refusal))
            return
        }
        guard server.reserveLargeBody(declared, peer: c.peer) else {
            reject(c, AdmissionPolicy.Refusal.uploadBudgetFull.answer)
            return
        }
        c.reservedBodyBytes = declared
        c.lastActivityMs = now
        c.rateWindowStartMs = now
        c.rateWindowBytes = 0
        // A chunked body is decoded by `decodeChunked`: http-parser stays paused after its head.
        if c.chunked == nil { http_parser_pause(c.parser, 0) }
        if !c.wantsRead && !c.peerClosed {
            c.wantsRead = true
            modify(c)
        }
        c.output = interim
        if !c.output.isEmpty { flush(c) }  // 100 Continue
        guard connections[c.id] != nil, case .reading = c.phase else { return }
        let pending = c.input
        c.input = []
        if !pending.isEmpty { pending.withUnsafeBytes { parse(c, $0) } }
    }
}
