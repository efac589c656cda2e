import Shared

/// AuthService settings, read from the environment; every field has a single-machine default.
struct AuthConfiguration: Sendable {
    /// Session lifetime in seconds (`AUTH_SESSION_TTL_SECONDS`, default 30 days).
    var sessionTTLSeconds: Int
    /// Seconds between deletions of expired and revoked sessions (`AUTH_SESSION_PURGE_SECONDS`,
    /// default 3600; the first runs at start).
    var sessionPurgeSeconds: Int
    /// Failed logins for one login identifier within the window before 429 (`AUTH_LOGIN_MAX_FAILURES`, default 5).
    var loginMaxFailures: Int
    /// The throttling window in seconds (`AUTH_LOGIN_WINDOW_SECONDS`, default 900 = 15 minutes).
    var loginWindowSeconds: Int
    /// Password hashes computed at once (`AUTH_HASH_CONCURRENCY`, default 2); each argon2id hash
    /// holds 19 MiB, so this bounds the memory a flood of logins can take.
    var hashConcurrency: Int
    /// Requests allowed to wait for a hashing slot before 503 `busy` (`AUTH_HASH_QUEUE_LIMIT`, default 256).
    var hashQueueLimit: Int

    /// - Throws: `ConfigurationError` naming the variable when a value is not an integer in range.
    init(env: Environment) throws {
        sessionTTLSeconds = try env.int(
            "AUTH_SESSION_TTL_SECONDS", default: 30 * 24 * 3600, range: 1...(10 * 365 * 24 * 3600))
        sessionPurgeSeconds = try env.int("AUTH_SESSION_PURGE_SECONDS", default: 3600, range: 1...(7 * 24 * 3600))
        loginMaxFailures = try env.int("AUTH_LOGIN_MAX_FAILURES", default: 5, range: 1...10_000)
        loginWindowSeconds = try env.int(
            "AUTH_LOGIN_WINDOW_SECONDS", default: 15 * 60, range: 1...(30 * 24 * 3600))
        hashConcurrency = try env.int("AUTH_HASH_CONCURRENCY", default: 2, range: 1...64)
        hashQueueLimit = try env.int("AUTH_HASH_QUEUE_LIMIT", default: 256, range: 0...100_000)
    }
}
