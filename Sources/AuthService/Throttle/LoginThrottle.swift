import Shared

/// Login throttling per login identifier, persisted in `login_failures`.
///
/// Each attempt first reserves a failure row in a write transaction (so concurrent attempts
/// cannot slip past the limit); a successful login deletes the identifier's rows. When
/// `maxFailures` rows lie within the window, attempts get 429 `too_many_attempts` with
/// `retryAfter` = seconds until the oldest of them leaves the window. Unknown accounts are
/// throttled the same way, so the answer never reveals whether an account exists.
struct LoginThrottle: Sendable {
    let database: Database
    let maxFailures: Int
    /// Window length in ms.
    let windowMs: Int64

    /// The key stored for a login identifier: SHA-256 of its trimmed lower-cased form.
    static func key(_ login: String) -> String {
        SessionToken.digest("login:" + login.trimmingWhitespace().lowercased())
    }

    /// Records an attempt as a failure unless the identifier is over the limit.
    /// - Returns: the reservation's row id (see `cancel`).
    /// - Throws: 429 `too_many_attempts` with `retryAfter` (seconds, ≥ 1).
    func reserve(key: String) async throws -> Int64 {
        let maxFailures = self.maxFailures
        let windowMs = self.windowMs
        return try await database.write { tx in
            let now = Timestamp.nowMs()
            try tx.query("DELETE FROM login_failures WHERE at <= ?", [now - windowMs])
            let times = try tx.query("SELECT at FROM login_failures WHERE login = ? ORDER BY at", [key]).map { $0.int(0) }
            if times.count >= maxFailures {
                let freedAt = times[times.count - maxFailures] + windowMs
                let seconds = Int((freedAt - now + 999) / 1000)
                throw ServiceError(
                    code: "too_many_attempts", message: "too many failed logins; try again later", status: 429,
                    retryAfter: max(1, seconds))
            }
            try tx.query("INSERT INTO login_failures(login, at) VALUES (?, ?)", [key, now])
            return tx.connection.lastInsertRowID
        }
    }

    /// Withdraws a reservation for an attempt that failed for another reason than the
    /// credentials (service busy, deadline passed).
    func cancel(_ reservation: Int64) async {
        _ = try? await database.write { tx in try tx.query("DELETE FROM login_failures WHERE rowid = ?", [reservation]) }
    }
}
