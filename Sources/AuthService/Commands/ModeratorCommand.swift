import BackendKit
import Foundation
import Storage
import Support
import Wire

/// `AuthService moderator grant|revoke USERNAME` and `AuthService moderator list`: the operator's
/// command for the moderator role (API.md "Account lifecycle and moderation", "Moderators"; no
/// API route grants it). It runs on AuthService's machine or in its container with AuthService's
/// own configuration (`DATA_DIR`, or `AUTH_DATABASE_URL`), opens that database beside the running
/// service and changes the role there (`ModeratorStore`):
///
/// - `grant`: the account is a moderator from its next login (a session carries the role it
///   had when it was made; `auth.validate` answers it).
/// - `revoke`: the role goes from the account and at once from its live sessions (the gateway
///   asks AuthService on every moderation request, so the next one is 403).
/// - `list`: the moderators, one a line: username, id, when granted (RFC 3339).
///
/// `scripts/moderator` runs it (deploy/README.md, "Moderators", for containers).
enum ModeratorCommand {
    static let usage = "usage: AuthService moderator grant|revoke USERNAME | AuthService moderator list"

    /// Runs the command if `arguments` name it.
    /// - Returns: nil when they do not; else the exit status: 0 done, 1 failed (no such account,
    ///   the database could not be opened), 2 usage.
    static func run(_ arguments: [String], env: Environment = Environment()) async -> Int32? {
        guard arguments.count >= 2, arguments[1] == "moderator" else { return nil }
        let rest = Array(arguments.dropFirst(2))
        guard let verb = rest.first,
            (["grant", "revoke"].contains(verb) && rest.count == 2) || (verb == "list" && rest.count == 1)
        else {
            print(usage)
            return 2
        }
        do {
            let database = try ServiceDatabase.open(AuthApp.self, env: env)
            let store = SQLModeratorStore(database: database)
            switch verb {
            case "grant":
                guard let identity = try await store.grant(username: rest[1], now: Timestamp.nowMs()) else {
                    print("moderator: no account is named \(rest[1])")
                    return 1
                }
                print("moderator: granted \(identity.username) (\(identity.id)); the role holds from their next login")
            case "revoke":
                guard let revoked = try await store.revoke(username: rest[1]) else {
                    print("moderator: no account is named \(rest[1])")
                    return 1
                }
                print(
                    "moderator: revoked \(revoked.identity.username) (\(revoked.identity.id)); "
                        + "\(revoked.sessions) live session(s) lost the role")
            default:
                for m in try await store.moderators() {
                    print("\(m.identity.username) \(m.identity.id) \(Timestamp.format(ms: m.grantedAt))")
                }
            }
            return 0
        } catch {
            print("moderator: failed: \(error)")
            return 1
        }
    }
}
