import BackendKit
import Foundation
import Messages
import ServiceKit
import Storage
import Support
import Synchronization
import Transport
import Wire

/// An in-process stand-in for another service: a `ServiceHost` with its own outbox database on
/// ephemeral loopback ports. It answers `ops.ping` and `ops.replay` like the real service, and
/// the test emits events through `write` (committed, then published) and registers whatever
/// RPC handlers it needs. Lets one service be tested against events its real producer may not
/// send yet (or on demand, e.g. while the consumer is stopped, to test replay).
public final class FakeProducer: Sendable {
    public let name: String
    public let database: Database
    public let host: ServiceHost

    /// - Parameters:
    ///   - name: the producer name stamped in event envelopes (`auth`, `profile`, ...).
    ///   - directory: where its SQLite file goes.
    ///   - security: its server sockets' (`.plain` for consumers in the same process; for a real
    ///     executable that consumes it, `Cluster.security(context:name:)` with `name`: it then
    ///     holds that service's key pair, as the real one would).
    /// - Throws: `DatabaseError`.
    public init(name: String, context: ZMQContext, directory: String, security: TransportSecurity = .plain) throws {
        self.name = name
        database = try Database(
            location: try TestStorage.location(directory, "fake-\(name)-\(RandomID.make().prefix(8))"), producer: name,
            migrations: [])
        host = ServiceHost(
            name: name, context: context, rpcBind: "tcp://127.0.0.1:*", eventsBind: "tcp://127.0.0.1:*",
            database: database,
            logger: Logger(service: "fake-\(name)", minimum: .error), security: security)
    }

    /// Binds and starts answering. - Returns: the bound endpoints.
    @discardableResult
    public func start() throws -> (rpc: String, events: String) { try host.start() }

    /// Client-side environment for a service that consumes this one, e.g. `PROFILE_RPC_ENDPOINT`
    /// and `PROFILE_EVENTS_ENDPOINT` for `prefix` `PROFILE`.
    public func environment(prefix: String) -> [String: String] {
        let bound = host.boundEndpoints.withLock { $0 }
        return ["\(prefix)_RPC_ENDPOINT": bound.rpc, "\(prefix)_EVENTS_ENDPOINT": bound.events]
    }

    /// Emits events in one transaction (`tx.emit(...)`); they are published after the commit.
    public func write(_ body: @escaping @Sendable (Transaction) throws -> Void) async throws {
        try await database.write(body)
    }

    /// Emits one event. - Returns: its sequence number.
    @discardableResult
    public func emit<E: Event>(_ event: E) async throws -> Int64 {
        try await database.write { tx in try tx.emit(event) }
        return try await database.outbox(after: .max - 1, limit: 0).head  // this fake's only writer
    }

    /// Stops the host (sockets close within a second).
    public func stop() { host.stop() }
}

/// A fake AuthService: an in-memory directory of identities that answers `auth.lookup_users`
/// (at most 1,000 ids and 1,000 usernames per request, as the real one) and publishes
/// `auth.user.registered` / `auth.users.imported` / `auth.user.changed` like the real one (no
/// passwords).
public final class FakeAuth: Sendable {
    public let producer: FakeProducer
    private let directory = IdentityDirectory()

    /// - Parameter security: see `FakeProducer.init`.
    /// - Parameter answersLookups: false makes `auth.lookup_users` find nobody, so consumers
    ///   know only what the events told them (e.g. to wait until a replica caught up).
    public init(
        context: ZMQContext, directory: String, answersLookups: Bool = true, security: TransportSecurity = .plain
    ) throws {
        producer = try FakeProducer(name: "auth", context: context, directory: directory, security: security)
        let directory = self.directory
        producer.host.on(Auth.LookupUsers.self) { request, _ in
            guard answersLookups else { return .init(users: []) }
            let names = Set(request.usernames.prefix(1_000).map { $0.lowercased() })
            let ids = Set(request.ids.prefix(1_000))
            let found = directory.users.withLock { all in
                all.values.filter { ids.contains($0.id) || names.contains($0.username) }
            }
            return .init(users: found.sorted { $0.id < $1.id })
        }
    }

    @discardableResult
    public func start() throws -> (rpc: String, events: String) { try producer.start() }

    /// Creates identities (id `u-<username>`, version 1); `publish: false` skips the event, so
    /// consumers only learn of them through `auth.lookup_users`.
    @discardableResult
    public func register(_ usernames: [String], publish: Bool = true) async throws -> [Identity] {
        let identities = usernames.map {
            Identity(id: "u-\($0)", username: $0, email: "\($0)@example.com", version: 1)
        }
        directory.users.withLock { all in for i in identities { all[i.id] = i } }
        if publish {
            try await producer.write { tx in
                for i in identities { try tx.emit(Auth.UserRegistered(identity: i)) }
            }
        }
        return identities
    }

    /// Creates identities as `auth.import_users` does (id `u-<username>`, version 1), published
    /// as one `auth.users.imported` unless `publish` is false.
    @discardableResult
    public func importUsers(_ usernames: [String], publish: Bool = true) async throws -> [Identity] {
        let identities = try await register(usernames, publish: false)
        if publish { try await producer.emit(Auth.UsersImported(identities: identities)) }
        return identities
    }

    /// Registers one identity. - Returns: it.
    public func register(_ username: String, publish: Bool = true) async throws -> Identity {
        try await register([username], publish: publish)[0]
    }

    /// Renames a user (version + 1) and publishes `auth.user.changed`.
    public func rename(_ id: String, to username: String) async throws -> Identity {
        let changed = directory.users.withLock { all -> Identity in
            var identity = all[id]!
            identity.username = username
            identity.version += 1
            all[id] = identity
            return identity
        }
        try await producer.emit(Auth.IdentityChanged(identity: changed))
        return changed
    }

    public func environment() -> [String: String] { producer.environment(prefix: "AUTH") }
    public func stop() { producer.stop() }
}

/// The fake AuthService's identities by id, shared with its lookup handler.
private final class IdentityDirectory: Sendable {
    let users = Mutex<[String: Identity]>([:])
}
