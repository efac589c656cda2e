/// What a server's administrator does, for the harness that runs a PostgreSQL server of its own
/// for tests and benchmarks (`TestPostgres`): make a database, end its sessions.
extension PostgresConnection {
    /// Creates the empty database `name` (letters, digits and `_` only: it is spliced, as
    /// identifiers cannot be bound).
    /// - Throws: `DatabaseError`; a precondition failure for another name (a programming error).
    public func createDatabase(_ name: String) throws {
        precondition(
            !name.isEmpty && name.utf8.allSatisfy { $0 == 95 || (48...57).contains($0) || (97...122).contains($0) },
            "a database name of a-z, 0-9 and _")
        try execute("CREATE DATABASE \(unescaped: name)")
    }

    /// Ends every session connected to database `name` but this one (`pg_terminate_backend`),
    /// as a failover or an administrator would.
    /// - Throws: `DatabaseError`.
    public func terminateSessions(database name: String) throws {
        _ = try query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(name) AND pid <> pg_backend_pid()")
    }
}
