/// Session-level advisory locks (PostgreSQL documentation, 9.27.10 "Advisory Lock Functions"):
/// the election of a service's active replica (`Leadership`) holds one on a connection of its own.
extension PostgresConnection {
    /// Takes the advisory lock `keys` for this session if no other session holds it
    /// (`pg_try_advisory_lock(int4, int4)`); it is held until released or the session ends.
    /// - Returns: whether this session holds it now.
    /// - Throws: `DatabaseError`.
    public func tryAdvisoryLock(_ keys: (Int32, Int32)) throws -> Bool {
        try scalar("SELECT pg_try_advisory_lock(\(literal: keys.0), \(literal: keys.1))::int") == 1
    }

    /// Whether this session (the current backend) holds the advisory lock `keys`, from
    /// `pg_locks`: a connection that died silently or was replaced by a new session shows here.
    /// - Throws: `DatabaseError`.
    public func holdsAdvisoryLock(_ keys: (Int32, Int32)) throws -> Bool {
        try scalar(
            """
            SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = \(literal: keys.0)::oid
                AND objid = \(literal: keys.1)::oid AND pid = pg_backend_pid() AND granted
            """) == 1
    }
}
