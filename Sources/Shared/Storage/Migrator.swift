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

/// Why `Migrator` refused to migrate a database (nothing was changed).
public enum MigrationError: Error, Equatable, CustomStringConvertible {
    /// The code lists the same migration id twice (a programming error: each id names one
    /// schema change).
    case duplicateId(String)
    /// The database records migrations this build does not know, oldest first: it was written
    /// by a newer build, and running on it could corrupt it.
    case unknownApplied([String])

    public var description: String {
        switch self {
        case .duplicateId(let id): "migration id \(id) is listed twice"
        case .unknownApplied(let ids):
            "the database was migrated by a newer build (unknown migrations: \(ids.joined(separator: ", ")))"
        }
    }
}

/// Applies migrations in order, each once, each in its own transaction, recording its id in
/// `schema_migrations`.
///
/// Databases written before the migrator counted applied migrations in `PRAGMA user_version`;
/// on such a database the first `user_version` migrations of `legacy` are recorded as applied
/// without running them again.
public enum Migrator {
    /// Checks a migration list before it touches a database.
    /// - Throws: `MigrationError.duplicateId` naming the first id listed twice.
    public static func validate(_ migrations: [Migration]) throws {
        var seen = Set<String>()
        for migration in migrations where !seen.insert(migration.id).inserted {
            throw MigrationError.duplicateId(migration.id)
        }
    }

    /// - Parameters:
    ///   - migrations: every migration, oldest first.
    ///   - legacy: the leading migrations a `user_version` may stand for
    ///     (the service's migrations from before named migrations existed).
    /// - Throws: `MigrationError.duplicateId` (nothing done), `MigrationError.unknownApplied`
    ///   when the database records a migration `migrations` does not list (nothing done);
    ///   `SQLiteError` (the failing migration is rolled back; earlier ones stay).
    public static func migrate(_ connection: SQLiteConnection, _ migrations: [Migration], legacy: [Migration] = []) throws {
        try validate(migrations)
        try connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations(id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        let recorded = try connection.query("SELECT id FROM schema_migrations ORDER BY rowid").map { try $0.string("id") }
        let known = Set(migrations.map(\.id))
        let unknown = recorded.filter { !known.contains($0) }
        if !unknown.isEmpty { throw MigrationError.unknownApplied(unknown) }
        var applied = Set(recorded)
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
