/// Redaction of a deleted account's events (API.md "Account lifecycle and moderation": every
/// piece of the user's data is erased). The outbox is kept for replay (a new replica or a
/// subscriber that fell behind reads it from its cursor), so an account's past events would
/// otherwise keep its username, email, captions and comment texts for as long as the service
/// runs, and a replica rebuilt from them would bring the account back.
///
/// A redacted event keeps its `seq` (readers rely on numbers without gaps) and becomes type
/// `redacted` with body `{}`, which every subscriber skips as an unknown type.
extension Outbox {
    /// The type a redacted event takes.
    public static let redactedType = "redacted"

    /// The highest seq in the outbox (0 when it is empty).
    public static func head(in tx: Transaction) throws -> Int64 {
        try tx.connection.scalar("SELECT COALESCE(MAX(seq), 0) FROM outbox") ?? 0
    }

    /// Redacts the events numbered `after < seq <= through` whose body mentions `id` (an opaque
    /// random id, so a substring match names that account alone), except those of the types in
    /// `keeping` (the lifecycle's own events, which carry nothing but ids and times). An event of
    /// a type in `rewrite` about many accounts at once (e.g. `auth.users.imported`) has its body
    /// given to that function instead, which returns the body without the account, or nil to
    /// redact it whole.
    /// - Returns: how many events were changed.
    /// - Throws: the engine's error.
    @discardableResult
    public static func redact(
        mentioning id: String, after: Int64, through: Int64, keeping: Set<String> = [],
        rewrite: [String: @Sendable (String) -> String?] = [:], in tx: Transaction
    ) throws -> Int {
        guard through > after, !id.isEmpty else { return 0 }
        let rows = try tx.query(
            """
            SELECT seq, type, body FROM outbox
            WHERE seq > \(after) AND seq <= \(through) AND body LIKE \("%" + id + "%") ORDER BY seq
            """)
        var changed = 0
        for row in rows {
            let (seq, type, body) = (try row.int64("seq"), try row.string("type"), try row.string("body"))
            guard !keeping.contains(type), type != redactedType, body.contains(id) else { continue }
            if let rewrite = rewrite[type], let kept = rewrite(body) {
                try tx.query("UPDATE outbox SET body = \(kept) WHERE seq = \(seq)")
            } else {
                try tx.query("UPDATE outbox SET type = \(redactedType), body = '{}' WHERE seq = \(seq)")
            }
            changed += 1
        }
        return changed
    }
}
