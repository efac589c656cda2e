/// One schema change, identified by a stable name (GRDB's `DatabaseMigrator` shape).
public struct Migration: Sendable {
    /// Stable, unique within the database, e.g. `profile.3-identity-replica`. Never renamed:
    /// it is how an existing database knows the migration ran.
    public let id: String
    /// One or more SQL statements, run in one transaction.
    public let sql: String

    public init(_ id: String, _ sql: String) {
        self.id = id
        self.sql = sql
    }
}

/// Applies migrations in order, each once, each in its own transaction, recording its id in
/// `schema_migrations`.
///
/// Databases written before the migrator counted applied migrations in `PRAGMA user_version`;
/// on such a database the first `user_version` migrations of `legacy` are recorded as applied
/// without running them again.
public enum Migrator {
    /// - Parameters:
    ///   - migrations: every migration, oldest first.
    ///   - legacyCount: how many of the leading migrations a `user_version` may stand for
    ///     (the service's migrations from before named migrations existed).
    /// - Throws: `SQLiteError` (the failing migration is rolled back; earlier ones stay).
    public static func migrate(_ connection: SQLiteConnection, _ migrations: [Migration], legacy: [Migration] = []) throws {
        try connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations(id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        var applied = Set(try connection.query("SELECT id FROM schema_migrations").map { try $0.string("id") })
        if applied.isEmpty, let version = try connection.scalar("PRAGMA user_version"), version > 0 {
            for migration in legacy.prefix(Int(version)) {
                try connection.query(
                    "INSERT INTO schema_migrations(id, applied_at) VALUES (?, ?)", [migration.id, Timestamp.now()])
                applied.insert(migration.id)
            }
        }
        for migration in migrations where !applied.contains(migration.id) {
            try connection.transaction {
                try connection.execute(migration.sql)
                try connection.query(
                    "INSERT INTO schema_migrations(id, applied_at) VALUES (?, ?)", [migration.id, Timestamp.now()])
            }
        }
    }
}
