import Support

/// The open notification streams, by recipient, and their resume bookkeeping (live events
/// reach them through `LiveNotifications`).
///
/// A stream is registered before its backlog is fetched; live events that arrive meanwhile are
/// held and merged after the backlog, and every event is written only if its `seq` is above the
/// last one written, so nothing is lost or repeated.
final class StreamHub: Sendable {
    /// One open stream.
    final class Subscription: Sendable {
        let id: Int
        let userId: String
        /// The client address that opened it (`Request.clientAddress`).
        let address: String
        let sessionId: String
        let stream: EventStream
        private struct State {
            var lastSeq: Int64
            /// Live events held while the backlog is fetched (nil once live).
            var held: [(seq: Int64, bytes: [UInt8])]?
        }
        private let state: Locked<State>
        fileprivate let metrics: Metrics

        fileprivate init(
            id: Int, userId: String, address: String, sessionId: String, stream: EventStream, afterSeq: Int64?,
            metrics: Metrics
        ) {
            self.id = id
            self.userId = userId
            self.address = address
            self.sessionId = sessionId
            self.stream = stream
            self.metrics = metrics
            self.state = Locked(State(lastSeq: afterSeq ?? 0, held: afterSeq == nil ? nil : []))
        }

        /// A live event: written now, or held until the backlog is in.
        func offer(seq: Int64, bytes: [UInt8]) {
            state.withLock { s in
                if s.held != nil {
                    s.held!.append((seq, bytes))
                } else {
                    write(&s, seq, bytes)
                }
            }
        }

        /// Writes the backlog (oldest first), then the held live events, and goes live; or, with
        /// `thenClose` (the backlog is incomplete), closes after the backlog. `resumeAfter`: a
        /// seq below the resume point the stream was opened with, from which it goes on instead
        /// (the client's Last-Event-ID is above everything there is).
        func finishBacklog(_ items: [(seq: Int64, bytes: [UInt8])], thenClose: Bool = false, resumeAfter: Int64? = nil) {
            state.withLock { s in
                if let resumeAfter {
                    // Live events held since the stream was attached are new to the client,
                    // even any that `resumeAfter`, read after they arrived, already counts.
                    let floor = min(resumeAfter, (s.held?.map(\.seq).min() ?? Int64.max) - 1)
                    if floor < s.lastSeq { s.lastSeq = floor }
                }
                for item in items { write(&s, item.seq, item.bytes) }
                if thenClose {
                    s.held = nil
                    stream.close()
                    return
                }
                let held = (s.held ?? []).sorted { $0.seq < $1.seq }
                s.held = nil
                for item in held { write(&s, item.seq, item.bytes) }
            }
        }

        /// The last seq written (the resume point).
        var lastSeq: Int64 { state.withLock { $0.lastSeq } }

        private func write(_ s: inout State, _ seq: Int64, _ bytes: [UInt8]) {
            guard seq > s.lastSeq, !stream.isClosed else { return }
            if stream.append(bytes) {
                s.lastSeq = seq
                metrics.eventDelivered()
            } else {
                metrics.eventDropped()
            }
        }
    }

    private struct State {
        var next = 0
        var byUser: [String: [Int: Subscription]] = [:]
        /// Open streams per client address (limited ones only).
        var byAddress: [String: Int] = [:]
        var count = 0
        var stopped = false
    }
    private let state = Locked(State())
    private let metrics: Metrics
    private let onRemove = Locked<(@Sendable (Subscription) -> Void)?>(nil)
    /// Most streams open at once (`GATEWAY_MAX_STREAMS`); past it a new stream gets 503.
    let capacity: Int
    /// Most streams one user may have open at once (`GATEWAY_MAX_STREAMS_PER_USER`).
    let perUser: Int
    /// Most streams one client address may have open at once (`GATEWAY_MAX_STREAMS_PER_ADDRESS`),
    /// except the addresses in `unlimitedAddresses` (trusted proxies).
    let perAddress: Int
    let unlimitedAddresses: Set<String>

    /// Why `open` refused a stream.
    enum Refusal: Error {
        /// The hub is full or stopping (503).
        case full
        /// The user already has `perUser` streams open (429).
        case perUser
        /// The client address already has `perAddress` streams open (429).
        case perAddress
    }

    init(
        metrics: Metrics, capacity: Int, perUser: Int = .max, perAddress: Int = .max,
        unlimitedAddresses: Set<String> = []
    ) {
        self.metrics = metrics
        self.capacity = capacity
        self.perUser = perUser
        self.perAddress = perAddress
        self.unlimitedAddresses = unlimitedAddresses
    }

    /// Open streams.
    var count: Int { state.withLock { $0.count } }

    /// Sets what runs when a stream goes (`LiveNotifications.detach`).
    func setOnRemove(_ body: @escaping @Sendable (Subscription) -> Void) { onRemove.set(body) }

    /// Registers a stream of `userId` opened from client `address`; `afterSeq` nil means live
    /// only (no backlog).
    /// - Returns: the subscription, or why there is none: the hub is stopping or full, or the
    ///   user or the address already has its most streams open.
    func open(userId: String, address: String, sessionId: String, stream: EventStream, afterSeq: Int64?)
        -> Result<Subscription, Refusal>
    {
        let metrics = self.metrics
        let (capacity, perUser, perAddress) = (self.capacity, self.perUser, self.perAddress)
        let limited = !unlimitedAddresses.contains(address)
        let opened = state.withLock { s -> Result<Subscription, Refusal> in
            if s.stopped || s.count >= capacity { return .failure(.full) }
            if s.byUser[userId]?.count ?? 0 >= perUser { return .failure(.perUser) }
            if limited && s.byAddress[address, default: 0] >= perAddress { return .failure(.perAddress) }
            s.next += 1
            let sub = Subscription(
                id: s.next, userId: userId, address: address, sessionId: sessionId, stream: stream,
                afterSeq: afterSeq, metrics: metrics)
            s.byUser[userId, default: [:]][sub.id] = sub
            if limited { s.byAddress[address, default: 0] += 1 }
            s.count += 1
            return .success(sub)
        }
        if case .success(let sub) = opened { stream.setOnClose { [weak self] in self?.remove(sub) } }
        return opened
    }

    private func remove(_ sub: Subscription) {
        let removed = state.withLock { s -> Bool in
            guard s.byUser[sub.userId]?.removeValue(forKey: sub.id) != nil else { return false }
            s.count -= 1
            if s.byUser[sub.userId]?.isEmpty == true { s.byUser[sub.userId] = nil }
            if let held = s.byAddress[sub.address] { s.byAddress[sub.address] = held > 1 ? held - 1 : nil }
            return true
        }
        // Not inline: a stream closes itself when its buffer overflows, which happens while
        // `LiveNotifications` delivers to it under its lock, and `detach` takes that lock.
        if removed, let onRemove = onRemove.get() { Task { onRemove(sub) } }
    }

    /// Closes the streams of `userId` (they resume with Last-Event-ID).
    func close(userId: String) {
        let subs = state.withLock { s in s.byUser[userId].map { Array($0.values) } ?? [] }
        for sub in subs { sub.stream.close() }
    }

    /// Closes the streams opened by these sessions (logout).
    func close(sessionIds: [String]) {
        let ids = Set(sessionIds)
        let subs = state.withLock { s in
            s.byUser.values.flatMap { $0.values }.filter { ids.contains($0.sessionId) }
        }
        for sub in subs { sub.stream.close() }
    }

    /// Writes a comment line to every stream (heartbeat).
    func heartbeat() {
        let subs = state.withLock { s in s.byUser.values.flatMap { $0.values } }
        let line = Array(": keep-alive\n\n".utf8)
        for sub in subs { sub.stream.append(line) }
    }

    /// Closes every stream and refuses new ones (shutdown).
    func closeAll() {
        let subs = state.withLock { s -> [Subscription] in
            s.stopped = true
            return s.byUser.values.flatMap { $0.values }
        }
        for sub in subs { sub.stream.close() }
    }
}
