import Messages
import Support

/// AuthService settings, read from the environment; every field has a single-machine default.
struct AuthConfiguration: Sendable {
    /// Session lifetime in seconds (`AUTH_SESSION_TTL_SECONDS`, default 30 days).
    var sessionTTLSeconds = 30 * 24 * 3600
    /// Seconds between deletions of expired and revoked sessions (`AUTH_SESSION_PURGE_SECONDS`,
    /// default 3600; the first runs at start).
    var sessionPurgeSeconds = 3600
    /// Login throttling (see `LoginThrottle.Policy` for the variables and defaults).
    var throttlePolicy = LoginThrottle.Policy()
    /// Password hashes computed at once (`AUTH_HASH_CONCURRENCY`, default 2); each argon2id hash
    /// holds 19 MiB, so this bounds the memory a flood of logins can take.
    var hashConcurrency = 2
    /// Requests allowed to wait for a hashing slot before 503 `busy` (`AUTH_HASH_QUEUE_LIMIT`, default 256).
    var hashQueueLimit = 256
    /// Whether `auth.import_users` and `auth.import_sessions` are served (`ALLOW_IMPORTS`,
    /// default false: see `Imports`).
    var allowImports = false
    /// `MODERATION_WORDS_FILE`: the operator's word list (`WordList`); a username containing a
    /// listed term is refused with 422 `objectionable_content` at registration and on a rename.
    /// Unset: nothing is refused.
    var words = WordList.empty

    /// The defaults.
    init() {}

    /// - Throws: `ConfigurationError` naming the variable when a value is not an integer in range
    ///   (or, for `ALLOW_IMPORTS`, not a boolean), or `MODERATION_WORDS_FILE` when its file cannot
    ///   be read or holds an unusable term.
    init(env: Environment) throws {
        sessionTTLSeconds = try env.int(
            "AUTH_SESSION_TTL_SECONDS", default: sessionTTLSeconds, range: 1...(10 * 365 * 24 * 3600))
        sessionPurgeSeconds = try env.int("AUTH_SESSION_PURGE_SECONDS", default: 3600, range: 1...(7 * 24 * 3600))
        throttlePolicy = LoginThrottle.Policy(
            maxFailuresPerAccountAndAddress: try env.int("AUTH_LOGIN_MAX_FAILURES", default: 5, range: 1...10_000),
            windowSeconds: try env.int("AUTH_LOGIN_WINDOW_SECONDS", default: 15 * 60, range: 1...(30 * 24 * 3600)),
            maxFailuresPerAddress: try env.int("AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS", default: 50, range: 1...1_000_000),
            maxFailuresPerAccountPerHour: try env.int(
                "AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT_HOUR", default: 100, range: 1...1_000_000))
        hashConcurrency = try env.int("AUTH_HASH_CONCURRENCY", default: 2, range: 1...64)
        hashQueueLimit = try env.int("AUTH_HASH_QUEUE_LIMIT", default: 256, range: 0...100_000)
        allowImports = try env.bool("ALLOW_IMPORTS", default: false)
        words = try WordList(env: env)
    }
}
