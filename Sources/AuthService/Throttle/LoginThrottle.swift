import Wire

/// Login throttling that a stranger cannot turn against a user (OWASP Authentication Cheat
/// Sheet, "Protect against automated attacks"; ASVS 4.0 V2.2.1).
///
/// Failures are counted three ways, each with its own limit (`Policy`):
/// - per account *and* client address (5 in 15 minutes): the guesser is refused, while the
///   account's owner signing in from another address still gets in;
/// - per client address across accounts (50 in 15 minutes): one address cannot spray guesses
///   over many accounts;
/// - per account across addresses (100 in an hour, ASVS V2.2.1's ceiling): guesses spread over
///   many addresses stay bounded. Past it the account refuses every address until the hour has
///   passed — the price of the ceiling, reached only by an attack from more than 20 addresses.
///
/// When no account matches the login identifier, the identifier stands in for the account, so
/// the answers never reveal whether an account exists. Over a limit, attempts get 429
/// `too_many_attempts` with `retryAfter` = seconds until the oldest counted failure leaves its
/// window. Attempts for one (account, address) pair run one at a time, so concurrent guesses
/// cannot slip past the pair limit and concurrent correct logins are never counted as failures
/// (the address and account limits may be overshot by the number of attempts in flight). A
/// successful login clears the pair's failures.
struct LoginThrottle: Sendable {
    /// The limits (environment variables in parentheses).
    struct Policy: Sendable {
        /// Failures per (account, address) within the window (`AUTH_LOGIN_MAX_FAILURES`, 5).
        var maxFailuresPerAccountAndAddress = 5
        /// The window in seconds (`AUTH_LOGIN_WINDOW_SECONDS`, 900 = 15 minutes).
        var windowSeconds = 15 * 60
        /// Failures per address across accounts within the window
        /// (`AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS`, 50).
        var maxFailuresPerAddress = 50
        /// Failures per account across addresses within an hour
        /// (`AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT_HOUR`, 100: ASVS V2.2.1).
        var maxFailuresPerAccountPerHour = 100
    }

    let store: any LoginFailureStore
    let policy: Policy
    let clock: Clock
    private let locks = KeyedLock()

    init(store: any LoginFailureStore, policy: Policy, clock: Clock) {
        self.store = store
        self.policy = policy
        self.clock = clock
    }

    /// The key for an attempt: the account when one matches the identifier, else the identifier
    /// (trimmed, lower-cased); and the client address (`unknown` when the caller gave none).
    static func key(accountId: String?, login: String, clientAddress: String?) -> LoginFailureKey {
        LoginFailureKey(
            account: SessionToken.digest(accountId.map { "account:" + $0 } ?? "login:" + login),
            address: SessionToken.digest("address:" + (clientAddress ?? "unknown")))
    }

    /// Runs one login attempt: throws 429 when over a limit, otherwise runs `body` and records a
    /// failure when it throws `failure`.
    /// - Throws: 429 `too_many_attempts` (with `retryAfter` seconds, ≥ 1), or what `body` throws.
    func attempt<T: Sendable>(_ key: LoginFailureKey, failure: ServiceError, _ body: () async throws -> T)
        async throws -> T
    {
        try await locks.withLock(key.account + key.address) {
            try await check(key)
            do {
                return try await body()
            } catch let error as ServiceError where error == failure {
                let now = clock.now()
                try await store.record(key, now: now, keepAfter: now - max(windowMs, hourMs))
                throw error
            }
        }
    }

    private var windowMs: Int64 { Int64(policy.windowSeconds) * 1000 }
    private let hourMs: Int64 = 3_600_000

    private func check(_ key: LoginFailureKey) async throws {
        let now = clock.now()
        let recent = try await store.recent(
            key, pairSince: now - windowMs, addressSince: now - windowMs, accountSince: now - hourMs)
        // The latest moment at which every exceeded limit is back under it.
        var freedAt: Int64?
        for (times, limit, window) in [
            (recent.pair, policy.maxFailuresPerAccountAndAddress, windowMs),
            (recent.address, policy.maxFailuresPerAddress, windowMs),
            (recent.account, policy.maxFailuresPerAccountPerHour, hourMs),
        ] where times.count >= limit {
            freedAt = max(freedAt ?? 0, times[times.count - limit] + window)
        }
        guard let freedAt else { return }
        throw ServiceError(
            .tooManyAttempts, message: "too many failed logins; try again later", status: 429,
            retryAfter: max(1, Int((freedAt - now + 999) / 1000)))
    }
}
