import BackendKit
import Foundation
import Harness
import Messages
import ServiceKit
import Storage
import Support
import TestSupport
import Testing
import Transport
import Wire

@testable import ProfileService

/// ProfileService built in-process as `ProfileApp.init(configuration:database:auth:)` builds it:
/// a temp database with `ProfileSchema.migrations`, the handlers and stores, and an RPC client
/// to an in-process AuthService stand-in (`AuthStandIn`). No process is started.
///
/// Handlers that are methods (`createPost`, `updateMe`, ...) are called directly. The closures
/// the handlers register with `host.on` are reached through `call(_:_:)`: the app registered on
/// an in-process `ServiceHost` on loopback (ServiceHost keeps its handlers private, so this is
/// the way to run exactly the registered closure).
final class ProfileFixture: Sendable {
    let directory: String
    let zmq = ZMQContext()
    let auth: AuthStandIn
    let authClient: RPCClient
    let database: Database
    let app: ProfileApp
    let host: ServiceHost
    let client: RPCClient
    /// Outbox seqs of the profile creations `register` made (left out of `events()`).
    let setupEvents = Locked<Set<Int64>>([])

    /// - Parameter prepare: runs on the database file's path before ProfileService opens it
    ///   (e.g. to write a database as an older version left it).
    init(
        configuration: ProfileConfiguration = ProfileConfiguration(), prepare: (String) throws -> Void = { _ in }
    ) async throws {
        directory = makeTemporaryDirectory("profile-inproc")
        try prepare("\(directory)/profile.sqlite")
        auth = try AuthStandIn(context: zmq, directory: directory)
        let logger = Logger(service: "test", minimum: .error)
        authClient = try RPCClient(
            service: "auth", endpoint: auth.rpcEndpoint, context: zmq, logger: logger, defaultTimeoutMs: 10_000)
        // Connected before the first call: a call that finds no peer is refused after 300 ms
        // (RPCClient.unsentRetryBudgetMs), shorter than a connect takes on a busy machine.
        try await waitUntilReachable(authClient, timeoutMs: 60_000)
        database = try Database(
            location: try TestStorage.location(directory, "profile"), producer: "profile", migrations: ProfileSchema.migrations,
            legacy: ProfileSchema.legacy)
        app = try ProfileApp(configuration: configuration, database: database, auth: authClient)
        host = ServiceHost(
            name: "profile", context: zmq, rpcBind: "tcp://127.0.0.1:*", eventsBind: "tcp://127.0.0.1:*",
            database: database, logger: logger)
        app.register(on: host)
        let bound = try host.start()
        client = try RPCClient(
            service: "profile", endpoint: bound.rpc, context: zmq, logger: logger, defaultTimeoutMs: 10_000)
        try await waitUntilReachable(client, timeoutMs: 60_000)
    }

    deinit {
        client.shutdown()
        authClient.shutdown()
        host.stop()
        auth.stop()
        // Open SQLite files keep working once unlinked; nothing here is needed after a test.
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs the handler registered for `R` (through the in-process host).
    func call<R: RPC>(_ rpc: R.Type, _ request: R.Request) async throws -> R.Reply {
        try await client.call(rpc, request, timeoutMs: 10_000)
    }

    /// A request context as the host would give a handler.
    func context(_ type: String) -> RequestContext {
        RequestContext(
            correlationId: RandomID.make(), type: type, deadline: Timestamp.nowMs() + 10_000, trace: RandomID.make(),
            logger: Logger(service: "test", minimum: .error))
    }

    /// Registers an account with the stand-in and creates its profile as the gateway does
    /// (`profile.create` right after `auth.register`).
    @discardableResult
    func register(
        _ username: String, name: String? = nil, birthDate: String? = nil, gender: String? = nil
    ) async throws -> Me {
        let identity = try await auth.register(username, publish: false)
        let head = database.currentHead()
        let me = try await app.profiles.createProfile(
            .init(identity: identity, name: name, birthDate: birthDate, gender: gender))
        // The new profile's `profile.user.changed` is setup, not what a test looks at.
        let created = try await database.outbox(after: head, limit: 100).events.map(\.seq)
        setupEvents.withLock { $0.formUnion(created) }
        return me
    }

    /// Creates a photo post with valid URLs through `PostHandlers.createPost`.
    @discardableResult
    func post(_ owner: Me, caption: String = "", tagged: [String] = []) async throws -> Profile.Post {
        try await app.posts.createPost(
            .init(
                ownerId: owner.id, postType: "photo", mediaURL: "https://cdn.example.com/m/\(RandomID.make()).jpg",
                thumbnailURL: "https://cdn.example.com/t/1.jpg", caption: caption, taggedUsernames: tagged))
    }

    /// One page of a grid (or, with `tagged`, a tagged tab) through the registered handler.
    func postsPage(
        _ viewer: Me, _ username: String, tagged: Bool = false, limit: Int = 20, cursor: String? = nil
    ) async throws -> Page<Profile.Post> {
        try await call(
            Profile.ListPosts.self,
            .init(viewerId: viewer.id, username: username, tagged: tagged, page: .init(limit: limit, cursor: cursor)))
    }

    /// Every page of a grid or tagged tab, following `nextCursor`.
    func allPosts(_ viewer: Me, _ username: String, tagged: Bool = false, limit: Int = 20) async throws -> [Profile.Post] {
        var items: [Profile.Post] = []
        var cursor: String? = nil
        repeat {
            let page = try await postsPage(viewer, username, tagged: tagged, limit: limit, cursor: cursor)
            items += page.items
            cursor = page.nextCursor
        } while cursor != nil
        return items
    }

    /// The outbox's events, oldest first (what ProfileService publishes), without the profile
    /// creations `register` made.
    func events() async throws -> [OutboxEvent] {
        let setup = setupEvents.withLock { $0 }
        return try await database.outbox(after: 0, limit: 1_000).events.filter { !setup.contains($0.seq) }
    }

    /// The outbox's event types, oldest first.
    func eventTypes() async throws -> [String] { try await events().map(\.type) }

    /// The bodies of the outbox's events of type `E`, oldest first.
    func events<E: Event>(_ type: E.Type) async throws -> [E] {
        try await events().filter { $0.type == E.type }.map { try WireJSON.decode(EventEnvelope<E>.self, from: $0.envelope).body }
    }
}

/// Runs `body` and returns the `ServiceError` it throws, recording an issue if it succeeds or
/// throws something else.
func serviceError<T>(
    _ body: () async throws -> T, sourceLocation: SourceLocation = #_sourceLocation
) async -> ServiceError? {
    do {
        _ = try await body()
        Issue.record("expected a ServiceError, got success", sourceLocation: sourceLocation)
    } catch let error as ServiceError {
        return error
    } catch {
        Issue.record("expected a ServiceError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The field errors of `error` by field name (the last one for a field named twice).
func fieldCodes(_ error: ServiceError?) -> [String: String] {
    Dictionary((error?.fields ?? []).map { ($0.field, $0.code) }, uniquingKeysWith: { $1 })
}

extension Me {
    /// An account nobody knows.
    static let unknown = Me(
        id: "0000000000000000000000000000dead", username: "unknown", name: "", bio: "", profilePhotoURL: nil, email: "",
        phone: nil, gender: nil, birthDate: nil, joinDate: "")
}
