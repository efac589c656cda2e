import BackendKit
import Messages
import Wire

/// `auth.register`, `auth.lookup_users`, `auth.change_identity`: validate, then call the stores.
struct AccountHandlers: Sendable {
    let accounts: any AccountStore
    let sessions: any SessionStore
    let hasher: PasswordHasher
    /// Session lifetime in ms.
    let sessionTTLMs: Int64
    let clock: Clock
    /// The operator's word list, applied to usernames (registration, rename, the field check).
    var words = WordList.empty

    func register(on host: ServiceHost) {
        host.on(Auth.Register.self) { request, context in try await register(request, context) }
        host.on(Auth.CompleteRegistration.self) { request, _ in
            try await accounts.completeRegistration(userId: request.userId)
            return Empty()
        }
        host.on(Auth.LookupUsers.self) { request, _ in try await lookupUsers(request) }
        host.on(Auth.ChangeIdentity.self) { request, context in try await changeIdentity(request, context) }
        host.on(Auth.CheckIdentityFields.self) { request, _ in try checkFields(request) }
    }

    /// Checks the given fields by the rules `register` and `changeIdentity` apply.
    /// - Throws: 400 with every field error, then 422 `objectionable_content` for a username with
    ///   a term of the word list.
    func checkFields(_ request: Auth.CheckIdentityFields.Request) throws -> Empty {
        let errors = [
            request.email.flatMap { IdentityRules.email($0).error },
            request.username.flatMap { IdentityRules.username($0).error },
            request.password.flatMap(IdentityRules.password),
        ].compactMap { $0 }
        guard errors.isEmpty else { throw ServiceError.identityValidation(errors) }
        try refuseObjectionable(request.username.map { IdentityRules.username($0).value })
        return Empty()
    }

    /// Throws 422 `objectionable_content` on `username` when the (normalised) `username` holds
    /// a term of the word list (`WordList.firstMatch(inUsername:)`); nil passes.
    func refuseObjectionable(_ username: String?) throws {
        if let e = words.checkUsername(username) { throw ServiceError.objectionableContent([e]) }
    }

    /// Validates every field (errors reported together), checks uniqueness, hashes the password,
    /// then stores the account with its first session (the store checks uniqueness again). A
    /// repeat of an unfinished registration finishes it (see `Auth.Register`).
    /// - Throws: 400 with `fields`, 422 `objectionable_content` (the username), 409 `email_taken` /
    ///   `username_taken`, 503 `busy`.
    func register(_ request: Auth.Register.Request, _ context: RequestContext) async throws -> Auth.SessionReply {
        let (email, emailError) = IdentityRules.email(request.email)
        let (username, usernameError) = IdentityRules.username(request.username)
        let errors = [emailError, usernameError, IdentityRules.password(request.password)].compactMap { $0 }
        guard errors.isEmpty else { throw ServiceError.identityValidation(errors) }
        try refuseObjectionable(username)
        // A cheap early answer before spending a hash.
        do {
            try await accounts.ensureAvailable(email: email, username: username, excluding: nil)
        } catch let taken as ServiceError where taken.status == 409 {
            if let resumed = try await resume(request, email: email, username: username, context) { return resumed }
            throw taken
        }
        let hash = try await hasher.hash(request.password, deadline: context.deadline)
        let identity = Identity(id: RandomID.make(), username: username, email: email, version: 1)
        let (session, reply) = SessionHandlers.newSession(userId: identity.id, now: clock.now(), ttlMs: sessionTTLMs)
        try await accounts.register(identity, passwordHash: hash, session: session)
        context.logger.info("auth.registered", metadata: ["user.id": identity.id])
        return Auth.SessionReply(identity: identity, session: reply)
    }

    /// The account of an unfinished registration that `request` repeats, with a new session; nil
    /// when there is none, or the password does not match it.
    private func resume(
        _ request: Auth.Register.Request, email: String, username: String, _ context: RequestContext
    ) async throws -> Auth.SessionReply? {
        let now = clock.now()
        guard
            let pending = try await accounts.pendingRegistration(
                email: email, username: username, since: now - Auth.Register.resumeWindowMs),
            try await hasher.verify(request.password, against: pending.passwordHash, deadline: context.deadline)
        else { return nil }
        let (session, reply) = SessionHandlers.newSession(userId: pending.identity.id, now: now, ttlMs: sessionTTLMs)
        guard try await accounts.resumeRegistration(userId: pending.identity.id, session: session) else { return nil }
        context.logger.info("auth.registration_resumed", metadata: ["user.id": pending.identity.id])
        return Auth.SessionReply(identity: pending.identity, session: reply)
    }

    /// Identities by id and by username (case-insensitive; a name outside the username
    /// alphabet, e.g. one that only lower-cases into it, names nobody); at most 1,000 of each
    /// are looked up.
    func lookupUsers(_ request: Auth.LookupUsers.Request) async throws -> Auth.LookupUsers.Reply {
        let usernames = request.usernames.prefix(1_000).compactMap { name in
            let (value, error) = IdentityRules.username(name)
            return error == nil ? value : nil
        }
        return Auth.LookupUsers.Reply(
            users: try await accounts.identities(ids: Array(request.ids.prefix(1_000)), usernames: usernames))
    }

    /// A new username and/or email (nil = unchanged), validated and unique.
    /// - Throws: 400 with `fields`, 422 `objectionable_content` (the username), 404, 409
    ///   `email_taken` / `username_taken`.
    func changeIdentity(_ request: Auth.ChangeIdentity.Request, _ context: RequestContext) async throws -> Identity {
        let username = request.username.map(IdentityRules.username)
        let email = request.email.map(IdentityRules.email)
        let errors = [username?.error, email?.error].compactMap { $0 }
        guard errors.isEmpty else { throw ServiceError.identityValidation(errors) }
        try refuseObjectionable(username?.value)
        let (identity, changed) = try await accounts.changeIdentity(
            userId: request.userId, username: username?.value, email: email?.value)
        if changed {
            context.logger.info(
                "auth.identity_changed", metadata: ["user.id": identity.id, "version": "\(identity.version)"])
        }
        return identity
    }
}
