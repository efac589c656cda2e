import Wire

/// The transactional outbox: events written with the state change they announce.
/// The outbox table and its envelope format.
public enum Outbox {
    /// The PostgreSQL notification channel a commit that wrote events notifies (`NOTIFY outbox`),
    /// so the replica that publishes the outbox (`Leadership`, `OutboxRelay`) reads it at once.
    public static let notifyChannel = "outbox"

    /// Tables every service database has: `outbox` (events, kept for replay) and
    /// `event_cursor` (the last sequence number applied per producer this service subscribes
    /// to, read and written only by `EventSubscriber`). `IF NOT EXISTS`: databases from before
    /// named migrations created them without a record.
    ///
    /// On PostgreSQL a sequence number is taken from the one row of `outbox_head` under its
    /// row lock, in the writing transaction just before its commit (see `append` and
    /// `Database.appendToOutbox`), not from a `bigserial`: a
    /// transaction that drew 1000 from a sequence can commit after one that drew 1001, and a
    /// reader already past 1001 would never see 1000. Under the lock the next writer waits until
    /// the holder commits or rolls back, so sequence numbers become visible in order, without gaps.
    public static let migrations = [
        Migration(
            "shared.1-outbox",
            sqlite: """
                CREATE TABLE IF NOT EXISTS outbox(
                    seq INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, time TEXT NOT NULL, body TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS event_cursor(producer TEXT PRIMARY KEY, seq INTEGER NOT NULL);
                """,
            postgres: """
                CREATE TABLE outbox(seq BIGINT PRIMARY KEY, type TEXT NOT NULL, time TEXT NOT NULL, body TEXT NOT NULL);
                CREATE TABLE outbox_head(id INTEGER PRIMARY KEY CHECK (id = 1), seq BIGINT NOT NULL);
                INSERT INTO outbox_head(id, seq) VALUES (1, 0);
                CREATE TABLE event_cursor(producer TEXT PRIMARY KEY, seq BIGINT NOT NULL);
                """)
    ]

    /// The statement that appends `events` on PostgreSQL, numbered after the head in their
    /// order, taking the `outbox_head` row lock; it returns their seqs. (SQLite appends each
    /// with `INSERT … RETURNING seq`: see `Database.appendToOutbox`.)
    static func append(_ events: ArraySlice<PendingEvent>) -> SQL {
        let values = events.enumerated().map { i, e in "(\(literal: i + 1), \(e.type), \(e.time), \(e.body))" as SQL }
        return """
            WITH head AS (UPDATE outbox_head SET seq = seq + \(literal: events.count) WHERE id = 1 RETURNING seq)
            INSERT INTO outbox(seq, type, time, body)
            SELECT head.seq - \(literal: events.count) + v.ord, v.type, v.time, v.body
            FROM head, (VALUES \(values.joined(separator: ", "))) AS v(ord, type, time, body) ORDER BY v.ord
            RETURNING seq
            """
    }

    /// Builds the envelope JSON (sorted keys, as `WireJSON` would) around an already-encoded body.
    static func envelope(producer: String, seq: Int64, type: String, time: String, body: String) -> [UInt8] {
        let p = String(decoding: (try? WireJSON.encode(producer)) ?? [], as: UTF8.self)
        let t = String(decoding: (try? WireJSON.encode(type)) ?? [], as: UTF8.self)
        return Array(
            "{\"body\":\(body),\"producer\":\(p),\"seq\":\(seq),\"time\":\"\(time)\",\"type\":\(t),\"v\":\(wireVersion)}"
                .utf8)
    }
}
