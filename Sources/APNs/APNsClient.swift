import Foundation

/// The APNs provider client: HTTP/2 over TLS through libcurl, token-based authentication.
///
/// One client keeps a small pool of long-lived connections (``APNsConfiguration/connections``,
/// default 2) and sends many pushes on each as concurrent HTTP/2 streams; it never opens a
/// connection per push (Apple, "Sending notification requests to APNs": keep connections open,
/// rapid connect/disconnect looks like an attack). Make one per process and keep it.
///
/// Each push is `POST {baseURL}/3/device/{token}` with `authorization: bearer <provider token>`,
/// `apns-topic`, `apns-push-type: alert`, `apns-priority`, `apns-expiration`, `apns-collapse-id`
/// (when set) and `content-type: application/json`; the body is the payload. The provider token
/// (``ProviderToken``) is shared by every request, replaced after 40 minutes, and on 403
/// `ExpiredProviderToken` / `InvalidProviderToken` replaced once and the push sent again once.
/// Responses become ``PushOutcome``s as Apple's "Handling notification responses from APNs"
/// documents them (see ``PushOutcome``); a request without a response (connection refused or
/// dropped, TLS failure, ``APNsConfiguration/requestTimeout`` passed) is `.retry`, and the
/// next request opens a new connection.
public final class APNsClient: PushTransport {
    /// What it was made with.
    public let configuration: APNsConfiguration
    private let pool: HTTP2Pool
    let tokens: ProviderTokenCache

    /// Loads the key and starts the pool's thread; no connection opens before the first send.
    /// - Throws: ``APNsConfigurationError`` when the configuration is invalid or the key does not
    ///   load (see ``APNsConfiguration/validate()``).
    public convenience init(configuration: APNsConfiguration) throws(APNsConfigurationError) {
        try self.init(configuration: configuration, clock: { Int64(Date().timeIntervalSince1970) })
    }

    /// - Parameter clock: seconds since 1970, for the provider token's `iat` and age (tests move it).
    init(configuration: APNsConfiguration, clock: @escaping @Sendable () -> Int64) throws(APNsConfigurationError) {
        try configuration.validate()
        self.configuration = configuration
        tokens = ProviderTokenCache(
            key: try configuration.loadKey(), keyID: configuration.keyID, teamID: configuration.teamID, clock: clock)
        pool = HTTP2Pool(
            settings: HTTP2PoolSettings(
                connections: configuration.connections, caFile: configuration.caFile,
                requestTimeoutMs: Int(configuration.requestTimeout * 1000)))
    }

    deinit { pool.shutdown() }

    /// Closes the connections. Sends in flight end with `.retry(reason: "client shut down")`, and
    /// so does every later one. Returns at once.
    public func shutdown() { pool.shutdown() }

    /// Sends every message concurrently and returns when each has its outcome, in order.
    ///
    /// A message APNs would refuse is not sent: a device token that is not 1 to 200 hex digits
    /// is `.removeDevice(reason: "BadDeviceToken")`; a collapse id over 64 bytes (or with control
    /// characters), a priority other than 5 or 10, or an empty or over-4,096-byte payload is
    /// `.dropped` with Apple's reason (`BadCollapseId`, `BadPriority`, `PayloadEmpty`,
    /// `PayloadTooLarge`).
    public func send(_ messages: [PushMessage]) async -> [PushOutcome] {
        guard !messages.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            let batch = Batch(count: messages.count, continuation: continuation)
            // One provider token and one submission for the whole batch.
            let token: ProviderToken
            do {
                token = try tokens.current()
            } catch {
                for index in messages.indices { batch.complete(index, .retry(reason: "provider token: \(error)", after: nil)) }
                return
            }
            var exchanges: [(HTTP2Exchange, @Sendable (HTTP2Result) -> Void)] = []
            exchanges.reserveCapacity(messages.count)
            for (index, message) in messages.enumerated() {
                switch APNsRequest.make(message, baseURL: configuration.baseURL, topic: configuration.topic) {
                case .failure(let rejection):
                    batch.complete(index, rejection.outcome)
                case .success(let request):
                    exchanges.append(
                        exchange(request, token: token, renewed: false) { batch.complete(index, $0) })
                }
            }
            pool.submit(exchanges)
        }
    }

    /// The exchange for `request` with `token`, and what to do with its result; `renewed` when
    /// `token` replaced one APNs rejected for this request.
    private func exchange(
        _ request: APNsRequest, token used: ProviderToken, renewed: Bool,
        done: @escaping @Sendable (PushOutcome) -> Void
    ) -> (HTTP2Exchange, @Sendable (HTTP2Result) -> Void) {
        let exchange = HTTP2Exchange(
            url: request.url, headers: request.headers + ["authorization: bearer \(used.jwt)"], body: request.body)
        return (
            exchange,
            { result in
                guard result.error == nil, result.status > 0 else {
                    done(.retry(reason: result.error ?? "no response", after: nil))
                    return
                }
                let response = APNsResponse(status: result.status, headers: result.headers, body: result.body)
                switch response.decision(tokenRenewed: renewed) {
                case .outcome(let outcome):
                    done(outcome)
                case .renewTokenAndResend:
                    do {
                        let fresh = try self.tokens.replace(used.jwt)
                        let (again, completion) = self.exchange(request, token: fresh, renewed: true, done: done)
                        self.pool.submit(again, completion: completion)
                    } catch {
                        done(.retry(reason: "provider token: \(error)", after: nil))
                    }
                }
            }
        )
    }
}

/// The outcomes of one `send` call, filled from the pool thread (and the caller's, for messages
/// refused locally); resumes the caller when the last one arrives.
private final class Batch: @unchecked Sendable {
    // @unchecked: `outcomes` and `remaining` are only touched while `lock` is held; the
    // continuation is resumed once, by whoever brings `remaining` to zero.
    private let lock = NSLock()
    private var outcomes: [PushOutcome?]
    private var remaining: Int
    private let continuation: CheckedContinuation<[PushOutcome], Never>

    init(count: Int, continuation: CheckedContinuation<[PushOutcome], Never>) {
        outcomes = Array(repeating: nil, count: count)
        remaining = count
        self.continuation = continuation
    }

    func complete(_ index: Int, _ outcome: PushOutcome) {
        lock.lock()
        precondition(outcomes[index] == nil, "a push completed twice")
        outcomes[index] = outcome
        remaining -= 1
        let finished = remaining == 0 ? outcomes.map { $0! } : nil
        lock.unlock()
        if let finished { continuation.resume(returning: finished) }
    }
}
