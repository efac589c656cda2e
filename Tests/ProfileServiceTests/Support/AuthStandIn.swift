import Foundation
import Harness
import Messages
import ServiceKit
import Support
import TestSupport
import Transport
import Wire

/// An in-process stand-in for AuthService: TestSupport's `FakeProducer` (a `ServiceHost` with
/// its own outbox on loopback) answering the three RPCs ProfileService asks —
/// `auth.lookup_users`, `auth.change_identity`, `auth.check_fields` — from an in-memory
/// directory, and publishing `auth.user.registered` / `auth.user.changed` like the real one.
///
/// The identity rules are a simplified copy of AuthService's (`IdentityRules`): a username is
/// 3–30 of `a-z A-Z 0-9 . _`, stored lower-cased; an email has one `@` and a dotted domain.
/// Tests here check what ProfileService does with AuthService's answers, not those rules.
final class AuthStandIn: Sendable {
    let producer: FakeProducer
    private let state = Locked(State())

    private struct State {
        var identities: [String: Identity] = [:]
        var lookups: [Auth.LookupUsers.Request] = []
        var changes: [Auth.ChangeIdentity.Request] = []
        var checks: [Auth.CheckIdentityFields.Request] = []
        var answersLookups = true
        /// Usernames it refuses with 422 `objectionable_content`, as AuthService does with
        /// `MODERATION_WORDS_FILE` (`WordList`).
        var words = WordList.empty
    }

    /// - Parameter security: its sockets' (see `FakeProducer.init`).
    /// - Throws: `DatabaseError` for the outbox, `ZMQError` when binding fails.
    init(context: ZMQContext, directory: String, security: TransportSecurity = .plain) throws {
        producer = try FakeProducer(name: "auth", context: context, directory: directory, security: security)
        let state = self.state
        let database = producer.database
        producer.host.on(Auth.LookupUsers.self) { request, _ in
            state.withLock { s in
                s.lookups.append(request)
                guard s.answersLookups else { return .init(users: []) }
                let ids = Set(request.ids)
                let names = Set(request.usernames.map { $0.lowercased() })
                return .init(
                    users: s.identities.values.filter { ids.contains($0.id) || names.contains($0.username) }
                        .sorted { $0.id < $1.id })
            }
        }
        producer.host.on(Auth.CheckIdentityFields.self) { request, _ in
            state.withLock { $0.checks.append(request) }
            let errors = [request.email.flatMap(Self.emailError), request.username.flatMap(Self.usernameError)]
                .compactMap { $0 }
            guard errors.isEmpty else { throw ServiceError.validation(errors) }
            try Self.refuseObjectionable(request.username, state)
            return Empty()
        }
        producer.host.on(Auth.ChangeIdentity.self) { request, _ in
            state.withLock { $0.changes.append(request) }
            let errors = [request.email.flatMap(Self.emailError), request.username.flatMap(Self.usernameError)]
                .compactMap { $0 }
            guard errors.isEmpty else { throw ServiceError.validation(errors) }
            try Self.refuseObjectionable(request.username, state)
            let changed = try state.withLock { s -> Identity in
                guard var identity = s.identities[request.userId] else { throw ServiceError.notFound("user") }
                let username = request.username?.lowercased()
                let email = request.email?.trimmingCharacters(in: .whitespaces).lowercased()
                if let username, s.identities.values.contains(where: { $0.username == username && $0.id != identity.id }) {
                    throw ServiceError.conflict("username_taken", "username is taken")
                }
                if let email, s.identities.values.contains(where: { $0.email == email && $0.id != identity.id }) {
                    throw ServiceError.conflict("email_taken", "email is taken")
                }
                identity.username = username ?? identity.username
                identity.email = email ?? identity.email
                identity.version += 1
                s.identities[identity.id] = identity
                return identity
            }
            _ = try await database.write { tx in try tx.emit(Auth.IdentityChanged(identity: changed)) }
            return changed
        }
        try producer.start()
    }

    /// 422 `objectionable_content` on `username` for a name the word list refuses.
    private static func refuseObjectionable(_ username: String?, _ state: Locked<State>) throws {
        if let e = state.withLock({ $0.words }).checkUsername(username) { throw ServiceError.objectionableContent([e]) }
    }

    static func usernameError(_ raw: String) -> FieldError? {
        let allowed = raw.unicodeScalars.allSatisfy { s in
            ("a"..."z").contains(s) || ("A"..."Z").contains(s) || ("0"..."9").contains(s) || s == "." || s == "_"
        }
        return allowed && (3...30).contains(raw.unicodeScalars.count)
            ? nil : FieldError(field: "username", code: "invalid_username", message: "3 to 30 of a-z, 0-9, '.' and '_'")
    }

    static func emailError(_ raw: String) -> FieldError? {
        let parts = raw.trimmingCharacters(in: .whitespaces).split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && parts[1].split(separator: ".").count >= 2
            ? nil : FieldError(field: "email", code: "invalid_email", message: "not a valid email address")
    }

    /// The RPC endpoint of the stand-in.
    var rpcEndpoint: String { producer.host.boundEndpoints.withLock { $0.rpc } }

    /// Its PUB endpoint.
    var eventsEndpoint: String { producer.host.boundEndpoints.withLock { $0.events } }

    /// Creates an identity (id `<username>-<random>`, version 1); `publish: false` keeps it out of
    /// the events, so a consumer can only learn it through `auth.lookup_users`.
    @discardableResult
    func register(_ username: String, publish: Bool = true) async throws -> Identity {
        let identity = Identity(
            id: "\(username)-\(RandomID.make().prefix(8))", username: username.lowercased(),
            email: "\(username.lowercased())@example.com", version: 1)
        state.withLock { $0.identities[identity.id] = identity }
        if publish { try await producer.emit(Auth.UserRegistered(identity: identity)) }
        return identity
    }

    /// Puts `identity` in the directory as it is (no event).
    func put(_ identity: Identity) { state.withLock { $0.identities[identity.id] = identity } }

    /// Renames an account (version + 1), publishing `auth.user.changed` unless `publish: false`.
    @discardableResult
    func rename(_ id: String, to username: String, publish: Bool = true) async throws -> Identity {
        let changed = state.withLock { s -> Identity in
            var identity = s.identities[id]!
            identity.username = username
            identity.version += 1
            s.identities[id] = identity
            return identity
        }
        if publish { try await producer.emit(Auth.IdentityChanged(identity: changed)) }
        return changed
    }

    /// The directory's current identity for `id`.
    func identity(_ id: String) -> Identity? { state.withLock { $0.identities[id] } }

    /// Whether `auth.lookup_users` answers from the directory (false: it finds nobody).
    func answerLookups(_ answers: Bool) { state.withLock { $0.answersLookups = answers } }

    /// Refuses usernames with a term of `words` from now on (422 `objectionable_content`).
    func refuse(_ words: WordList) { state.withLock { $0.words = words } }

    /// The `auth.lookup_users` requests received so far.
    var lookups: [Auth.LookupUsers.Request] { state.withLock { $0.lookups } }

    /// The `auth.change_identity` requests received so far.
    var changes: [Auth.ChangeIdentity.Request] { state.withLock { $0.changes } }

    /// The `auth.check_fields` requests received so far.
    var checks: [Auth.CheckIdentityFields.Request] { state.withLock { $0.checks } }

    /// Its outbox's newest sequence number.
    func head() async throws -> Int64 { try await producer.database.outbox(after: 0, limit: 0).head }

    func stop() { producer.stop() }
}
