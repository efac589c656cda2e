import Storage

/// Whose failed logins: the account (or, when no account matches, the login identifier) and
/// the client address, each as a SHA-256 digest (an identifier may be a mistyped password, and
/// addresses are personal data, so neither is stored as typed).
struct LoginFailureKey: Sendable, Hashable {
    var account: String
    var address: String
}

/// Failures within the throttling windows, oldest first (Unix ms).
struct RecentFailures: Sendable {
    /// This account from this address.
    var pair: [Int64]
    /// Any account from this address.
    var address: [Int64]
    /// This account from any address.
    var account: [Int64]
}

/// Failed logins (`login_failures`): every statement on that table.
protocol LoginFailureStore: Sendable {
    /// Failures after `pairSince` for the pair, after `addressSince` for the address and after
    /// `accountSince` for the account.
    func recent(_ key: LoginFailureKey, pairSince: Int64, addressSince: Int64, accountSince: Int64) async throws
        -> RecentFailures

    /// Records a failure at `now` and deletes failures older than `keepAfter`.
    func record(_ key: LoginFailureKey, now: Int64, keepAfter: Int64) async throws
}

/// `LoginFailureStore` on a SQL `Database`, either engine.
struct SQLLoginFailureStore: LoginFailureStore {
    let database: Database

    /// Deletes the pair's failures in `tx` (a successful login from that address).
    static func clear(_ key: LoginFailureKey, in tx: Transaction) throws {
        try tx.query(
            "DELETE FROM login_failures WHERE account_key = \(key.account) AND address_key = \(key.address)")
    }

    func recent(_ key: LoginFailureKey, pairSince: Int64, addressSince: Int64, accountSince: Int64) async throws
        -> RecentFailures
    {
        try await database.read { c in
            func times(_ sql: SQL) throws -> [Int64] {
                try c.query(sql).map { try $0.int64("at") }
            }
            return RecentFailures(
                pair: try times(
                    """
                    SELECT at FROM login_failures WHERE account_key = \(key.account) AND address_key = \(key.address)
                        AND at > \(pairSince) ORDER BY at
                    """),
                address: try times(
                    "SELECT at FROM login_failures WHERE address_key = \(key.address) AND at > \(addressSince) ORDER BY at"),
                account: try times(
                    "SELECT at FROM login_failures WHERE account_key = \(key.account) AND at > \(accountSince) ORDER BY at"))
        }
    }

    func record(_ key: LoginFailureKey, now: Int64, keepAfter: Int64) async throws {
        try await database.write { tx in
            try tx.query("DELETE FROM login_failures WHERE at <= \(keepAfter)")
            try tx.query(
                "INSERT INTO login_failures(account_key, address_key, at) VALUES (\(key.account), \(key.address), \(now))")
        }
    }
}
