import Wire

/// One schema change, identified by a stable name (GRDB's `DatabaseMigrator` shape).
public struct Migration: Sendable {
    /// Stable, unique within the database, e.g. `profile.3-identity-replica`. Never renamed:
    /// it is how an existing database knows the migration ran.
    public let id: String
    /// One or more SQL statements for SQLite, run in one transaction; nil: nothing to do there
    /// (the migration is recorded as applied).
    public let sqlite: String?
    /// The same for PostgreSQL.
    public let postgres: String?

    /// A migration written once for both engines, each running its rendering of `sql`
    /// (dialect fragments such as `SQL.bigint` and `SQL.withoutRowid` pick each engine's side).
    /// `sql` binds no values.
    public init(_ id: String, _ sql: SQL) {
        self.init(id, sqlite: sql, postgres: sql)
    }

    /// A migration with one text per engine; nil where the engine has nothing to do (a SQLite
    /// migration of data PostgreSQL never had, or PostgreSQL's own starting schema). Neither
    /// binds values.
    public init(_ id: String, sqlite: SQL?, postgres: SQL?) {
        precondition(sqlite?.binds.isEmpty != false && postgres?.binds.isEmpty != false, "a migration binds no values")
        self.id = id
        self.sqlite = sqlite?.text(for: .sqlite)
        self.postgres = postgres?.text(for: .postgres)
    }

    /// A migration that runs on SQLite only: from before PostgreSQL was an engine (a
    /// PostgreSQL database starts from the schema these built, in one migration of its own).
    public static func sqlite(_ id: String, _ sql: SQL) -> Migration {
        Migration(id, sqlite: sql, postgres: nil)
    }

    /// The SQL for `engine`, nil when it has none.
    public func sql(for engine: StorageEngine) -> String? {
        switch engine {
        case .sqlite: sqlite
        case .postgres: postgres
        }
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
/// `schema_migrations`. On PostgreSQL the whole run holds a transaction-independent advisory
/// lock (`pg_advisory_lock`), so replicas that start together migrate once: the second waits,
/// then finds every migration recorded.
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
    ///   `DatabaseError` (the failing migration is rolled back; earlier ones stay).
    public static func migrate(
        _ connection: DatabaseConnection, _ migrations: [Migration], legacy: [Migration] = []
    ) throws {
        try validate(migrations)
        let engine = connection.engine
        try connection.execute(.postgresOnly("SELECT pg_advisory_lock(\(advisoryLockKey))"))
        defer { try? connection.execute(.postgresOnly("SELECT pg_advisory_unlock(\(advisoryLockKey))")) }
        try connection.execute(
            .dialect(
                sqlite: "CREATE TABLE IF NOT EXISTS schema_migrations(id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)",
                postgres: """
                    CREATE TABLE IF NOT EXISTS schema_migrations(
                        position BIGINT GENERATED ALWAYS AS IDENTITY, id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)
                    """))
        let recorded = try connection.query("SELECT id FROM schema_migrations ORDER BY \(SQL.insertionOrder)")
            .map { try $0.string("id") }
        let known = Set(migrations.map(\.id))
        let unknown = recorded.filter { !known.contains($0) }
        if !unknown.isEmpty { throw MigrationError.unknownApplied(unknown) }
        var applied = Set(recorded)
        if applied.isEmpty, let sqlite = connection.sqlite, let version = try sqlite.scalar("PRAGMA user_version"),
            version > 0
        {
            for migration in legacy.prefix(Int(version)) {
                try connection.query(
                    "INSERT INTO schema_migrations(id, applied_at) VALUES (\(migration.id), \(Timestamp.now()))")
                applied.insert(migration.id)
            }
        }
        for migration in migrations where !applied.contains(migration.id) {
            try connection.transaction {
                if let sql = migration.sql(for: engine) { try connection.execute(SQL(unescaped: sql)) }
                try connection.query(
                    "INSERT INTO schema_migrations(id, applied_at) VALUES (\(migration.id), \(Timestamp.now()))")
            }
        }
    }

    /// The advisory lock key migrations hold on PostgreSQL: the first 8 bytes of "migrate!"
    /// as a big-endian integer, a constant no other lock in these databases uses.
    static let advisoryLockKey: Int64 = 0x6D69_6772_6174_6521
}
