import BackendKit
import Foundation
import Harness
import Messages
import Support
import TestSupport
import Testing

@testable import ProfileService

/// `auth.users.imported` in ProfileService's identity replica: one event creates every new
/// account's identity and profile (joined when the event was committed) in one transaction, as
/// one `auth.user.registered` each would; identities a lookup brought first, and usernames a
/// stale row still holds, go by the same rules as single events.
@Suite struct ImportReplicaTests {
    static func identities(_ names: [String], version: Int64 = 1) -> [Identity] {
        names.map { Identity(id: "\($0)-id", username: $0, email: "\($0)@example.com", version: version) }
    }

    func applyImported(_ f: ProfileFixture, _ identities: [Identity], time: String) async throws -> Int {
        let replica = f.app.replica
        return try await f.database.write { tx in try replica.apply(imported: identities, time: time, in: tx) }
    }

    @Test func anImportEventCreatesEveryIdentityAndProfile() async throws {
        let f = try await ProfileFixture()
        let imported = Self.identities((0..<1_000).map { "user_\($0)" })
        let time = "2026-12-01T10:00:00.000Z"
        #expect(try await applyImported(f, imported, time: time) == 1_000)
        let (identities, profiles) = try await f.database.read { c in
            (try c.scalar("SELECT COUNT(*) FROM identities"), try c.scalar("SELECT COUNT(*) FROM profiles"))
        }
        #expect(identities == 1_000 && profiles == 1_000)
        let me = try await f.call(Profile.GetMe.self, .init(userId: "user_7-id"))
        #expect(me.username == "user_7" && me.email == "user_7@example.com" && me.joinDate == time)
        #expect(try await f.app.profiles.header("USER_999").user.id == "user_999-id")
        #expect(f.auth.lookups.isEmpty, "the replica knew them all")
        // The same event again (a replay) changes nothing.
        #expect(try await applyImported(f, imported, time: "2026-12-02T00:00:00.000Z") == 0)
        #expect(try await f.call(Profile.GetMe.self, .init(userId: "user_7-id")).joinDate == time)
    }

    @Test func identitiesTheReplicaAlreadyHasGoByTheRenameRule() async throws {
        let f = try await ProfileFixture()
        // A lookup brought one of them before the event (same version): kept, one profile.
        let early = try await f.register("early")
        // A stale row holds a name the import gives to a new account (its owner was renamed
        // at AuthService; that event has not arrived).
        let stale = try await f.register("taken")
        let imported = [
            Identity(id: early.id, username: "early", email: early.email, version: 1),
            Identity(id: "new-id", username: "taken", email: "new@example.com", version: 1),
        ]
        #expect(try await applyImported(f, imported, time: "2026-12-01T10:00:00.000Z") == 1)
        let rows = try await f.database.read { c in
            try c.query("SELECT id, username FROM identities ORDER BY id").map {
                "\(try $0.string("id")) \(try $0.optionalString("username") ?? "-")"
            }
        }
        #expect(rows.sorted() == ["\(early.id) early", "\(stale.id) -", "new-id taken"].sorted())
        #expect(try await f.database.read { try $0.scalar("SELECT COUNT(*) FROM profiles") } == 3)
        #expect(try await f.app.profiles.header("taken").user.id == "new-id")
    }

    /// Through a real `EventSubscriber` from the AuthService stand-in: the handler is registered
    /// by `IdentityReplica.subscribe`, and the profiles exist once the event is applied.
    @Test func theSubscriberAppliesTheImportEvent() async throws {
        let f = try await ProfileFixture()
        f.auth.answerLookups(false)
        let subscriber = EventSubscriber(
            producer: .auth, endpoint: f.auth.eventsEndpoint, context: f.zmq, replay: f.authClient, database: f.database,
            logger: Logger(service: "test", minimum: .error))
        f.app.replica.subscribe(subscriber)
        let running = Task { try await subscriber.run() }
        defer { running.cancel() }
        let imported = Self.identities(["ann", "ben", "cat"])
        for identity in imported { f.auth.put(identity) }
        let seq = try await f.auth.producer.emit(Auth.UsersImported(identities: imported))
        try await eventually("the replica applied the import event") {
            try await f.database.read { try $0.scalar("SELECT seq FROM event_cursor WHERE producer = 'auth'") } == seq
        }
        for identity in imported {
            #expect(try await f.app.profiles.header(identity.username).user.id == identity.id)
        }
        #expect(try await f.database.read { try $0.scalar("SELECT COUNT(*) FROM profiles") } == 3)
        #expect(f.auth.lookups.isEmpty)
    }
}
