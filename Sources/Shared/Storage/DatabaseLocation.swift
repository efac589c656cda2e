/// Where a service's database is: a SQLite file or a PostgreSQL database, from
/// `<SERVICE>_DATABASE_URL`.
public enum DatabaseLocation: Sendable, Equatable, CustomStringConvertible {
    /// A SQLite file (created when missing).
    case sqlite(path: String)
    /// A PostgreSQL database, as a libpq connection URI (`postgres://user@host:port/db?...`);
    /// multi-host URIs with `target_session_attrs=read-write` work as libpq defines them
    /// (PostgreSQL documentation, 34.1.1 "Connection Strings").
    case postgres(url: String)

    /// Why a database URL was refused.
    public struct InvalidURL: Error, CustomStringConvertible, Sendable {
        public var url: String
        public var reason: String
        public var description: String { "invalid database URL \"\(url)\": \(reason)" }
    }

    /// Parses a database URL: `sqlite:<path>` (a relative path is taken under `dataDirectory`),
    /// or `postgres://…` / `postgresql://…` (passed to libpq as written).
    /// - Throws: `InvalidURL` for another scheme or an empty path.
    public init(url: String, dataDirectory: String) throws {
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            self = .postgres(url: url)
            return
        }
        guard url.hasPrefix("sqlite:") else {
            throw InvalidURL(url: url, reason: "the scheme must be sqlite: or postgres://")
        }
        var path = String(url.dropFirst("sqlite:".count))
        if path.hasPrefix("//") { path.removeFirst(2) }
        guard !path.isEmpty else { throw InvalidURL(url: url, reason: "no path after sqlite:") }
        self = .sqlite(path: path.hasPrefix("/") ? path : "\(dataDirectory)/\(path)")
    }

    /// The engine this location names.
    public var engine: StorageEngine {
        switch self {
        case .sqlite: .sqlite
        case .postgres: .postgres
        }
    }

    /// How many reader connections a `Database` opens beside its writer unless configured:
    /// 2 on SQLite (a read waits on a core), 8 on PostgreSQL (a read waits on round trips, not
    /// on a core).
    public var defaultReaders: Int {
        switch self {
        case .sqlite: 2
        case .postgres: 8
        }
    }

    /// Whether replicas of a service may share the database: true on PostgreSQL (any number of
    /// processes), false on SQLite (one process per file).
    public var isShared: Bool {
        switch self {
        case .sqlite: false
        case .postgres: true
        }
    }

    /// The location without a password (for logs).
    public var description: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let url): "postgres:" + Self.redacted(url)
        }
    }

    /// `url` with the password of its user-info part replaced by `***`.
    static func redacted(_ url: String) -> String {
        guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@") else {
            return url
        }
        let userInfo = url[scheme.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(url[at...])
    }

    /// Opens one connection (a `Database` opens its own; this is for tools and tests that
    /// look at a service's database from outside).
    /// - Throws: the engine's error.
    public func connect() throws -> DatabaseConnection {
        switch self {
        case .sqlite(let path): DatabaseConnection(try SQLiteConnection(path: path))
        case .postgres(let url): DatabaseConnection(try PostgresConnection(url: url))
        }
    }
}
