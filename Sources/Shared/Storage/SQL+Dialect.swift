/// The places where SQLite's and PostgreSQL's SQL differ, as fragments that render each
/// engine's side: a store writes `\(SQL.greatest)(a, b)` once and never asks which engine it
/// runs on. Everything else is written once in the dialect both accept (`INSERT … ON CONFLICT DO
/// NOTHING`, `RETURNING`, qualified `ON CONFLICT … DO UPDATE` columns, an alias for every
/// subquery in `FROM`, `CAST(x AS BIGINT)` to type a parameter that may be NULL).
extension SQL {
    /// The two-argument (or more) maximum: SQLite's scalar `MAX(a, b)`, PostgreSQL's
    /// `GREATEST(a, b)`. Used as a function name: `\(SQL.greatest)(a, b)`.
    public static let greatest = dialect(sqlite: "MAX", postgres: "GREATEST")

    /// The two-argument (or more) minimum: SQLite's scalar `MIN(a, b)`, PostgreSQL's `LEAST(a, b)`.
    public static let least = dialect(sqlite: "MIN", postgres: "LEAST")

    /// A 64-bit integer column type: `INTEGER` on SQLite (every integer is 64-bit there, and only
    /// `INTEGER PRIMARY KEY` aliases the rowid), `BIGINT` on PostgreSQL.
    public static let bigint = dialect(sqlite: "INTEGER", postgres: "BIGINT")

    /// A 64-bit key the database assigns in insertion order: SQLite's `INTEGER PRIMARY KEY` (the
    /// rowid), PostgreSQL's `BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY`.
    public static let generatedKey = dialect(
        sqlite: "INTEGER PRIMARY KEY", postgres: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY")

    /// ` WITHOUT ROWID` after a SQLite table whose primary key is its only index (the rows are
    /// stored in it); nothing on PostgreSQL, whose tables are heaps.
    public static let withoutRowid = dialect(sqlite: " WITHOUT ROWID", postgres: "")

    /// The column that orders a queue table's rows by insertion: SQLite's `rowid`, PostgreSQL's
    /// identity column `position` (such tables have one there).
    public static let insertionOrder = dialect(sqlite: "rowid", postgres: "position")

    /// ` FOR UPDATE SKIP LOCKED` on PostgreSQL, after a `SELECT` that picks rows to work on: rows
    /// another replica's open transaction holds are skipped. Nothing on SQLite, whose one writer
    /// works alone.
    public static let forUpdateSkipLocked = dialect(sqlite: "", postgres: " FOR UPDATE SKIP LOCKED")

    /// ` FOR UPDATE OF alias SKIP LOCKED` on PostgreSQL (locks the rows of `alias` only, in a
    /// join); nothing on SQLite. `alias` is a table alias written in the statement.
    public static func forUpdateSkipLocked(of alias: String) -> SQL {
        dialect(sqlite: "", postgres: " FOR UPDATE OF \(alias) SKIP LOCKED")
    }

    /// ` FOR UPDATE` on PostgreSQL, after a `SELECT` whose rows the transaction must hold until
    /// it ends; nothing on SQLite, where the writer's transaction already excludes every other.
    public static let forUpdate = dialect(sqlite: "", postgres: " FOR UPDATE")

    /// `INDEXED BY index` on SQLite, after a table in `FROM`: SQLite plans without statistics and
    /// may take the primary key's range where `index` reads a few rows. Nothing on PostgreSQL,
    /// which plans from statistics. `index` is an index name from the schema.
    public static func indexedBy(_ index: String) -> SQL {
        dialect(sqlite: "INDEXED BY \(index)", postgres: "")
    }

    /// No row limit, before an `OFFSET` (SQLite takes `OFFSET` only after a `LIMIT`): SQLite's
    /// `LIMIT -1`, PostgreSQL's `LIMIT ALL`.
    public static let noLimit = dialect(sqlite: "LIMIT -1", postgres: "LIMIT ALL")

    /// The integers of a JSON array (bound as text) as a table of one column, `value`: SQLite's
    /// `json_each`, PostgreSQL's `jsonb_array_elements_text` cast to `bigint`. Used as a
    /// subquery: `FROM (\(SQL.integers(inJSONArray: json))) k`.
    public static func integers(inJSONArray json: String) -> SQL {
        dialect(
            sqlite: "SELECT value FROM json_each(",
            postgres: "SELECT value::bigint AS value FROM jsonb_array_elements_text(")
            + "\(json)" + dialect(sqlite: ")", postgres: "::jsonb)")
    }

    /// `statement` on PostgreSQL, nothing on SQLite (`DatabaseConnection.execute` then runs
    /// nothing): a session setting only PostgreSQL has.
    public static func postgresOnly(_ statement: String) -> SQL {
        dialect(sqlite: "", postgres: statement)
    }

    /// The statement that opens a write transaction: `BEGIN IMMEDIATE` on SQLite (the write lock
    /// at once, so a batch never fails to upgrade from a read), `BEGIN` on PostgreSQL.
    static let beginWrite = dialect(sqlite: "BEGIN IMMEDIATE", postgres: "BEGIN")

    /// The statement that opens a read of one snapshot: `BEGIN` on SQLite (a WAL read
    /// transaction), a read-only `REPEATABLE READ` transaction on PostgreSQL.
    static let beginSnapshot = dialect(sqlite: "BEGIN", postgres: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
}
