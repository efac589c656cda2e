/// The transactional outbox: events written with the state change they announce.
/// The outbox table and its envelope format.
public enum Outbox {
    /// Tables every service database has: `outbox` (events, kept for replay) and
    /// `event_cursor` (the last sequence number applied per producer this service subscribes
    /// to, read and written only by `EventSubscriber`). `IF NOT EXISTS`: databases from before
    /// named migrations created them without a record.
    public static let migrations = [
        Migration(
            "shared.1-outbox",
            """
            CREATE TABLE IF NOT EXISTS outbox(
                seq INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, time TEXT NOT NULL, body TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS event_cursor(producer TEXT PRIMARY KEY, seq INTEGER NOT NULL);
            """)
    ]

    /// Builds the envelope JSON (sorted keys, as `WireJSON` would) around an already-encoded body.
    static func envelope(producer: String, seq: Int64, type: String, time: String, body: String) -> [UInt8] {
        let p = String(decoding: (try? WireJSON.encode(producer)) ?? [], as: UTF8.self)
        let t = String(decoding: (try? WireJSON.encode(type)) ?? [], as: UTF8.self)
        return Array(
            "{\"body\":\(body),\"producer\":\(p),\"seq\":\(seq),\"time\":\"\(time)\",\"type\":\(t),\"v\":\(wireVersion)}"
                .utf8)
    }
}
