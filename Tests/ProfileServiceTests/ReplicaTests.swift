import BackendKit
import Foundation
import Harness
import Messages
import ServiceKit
import Support
import TestSupport
import Testing

@testable import ProfileService

/// The identity replica's rename rule in ProfileService: a username always resolves to at most
/// one account, whatever order renames arrive in; a row that lost its name to a newer owner is
/// a miss, refreshed from AuthService; a late event older than the replica's row changes nothing.
@Suite struct ReplicaTests {
    /// How many replica rows hold each of `names`.
    static func holders(_ f: ProfileFixture, _ names: [String]) async throws -> [String: Int64] {
        try await f.database.read { c in
            var counts: [String: Int64] = [:]
            for name in names { counts[name] = try c.scalar("SELECT COUNT(*) FROM identities WHERE username = \(name)") }
            return counts
        }
    }

    /// The account id each name resolves to in the replica alone (no lookup), nil for none.
    static func resolve(_ f: ProfileFixture, _ names: [String]) async throws -> [String: String?] {
        try await f.database.read { c in
            var found: [String: String?] = [:]
            for name in names { found.updateValue(try IdentityReplica.identity(username: name, on: c)?.id, forKey: name) }
            return found
        }
    }

    func apply(_ f: ProfileFixture, _ identity: Identity) async throws {
        let replica = f.app.replica
        try await f.database.write { tx in _ = try replica.apply(identity, in: tx) }
    }

    /// Alice and Bob swap usernames at AuthService (through a temporary name, as uniqueness
    /// there requires). The replica learns the final identities in either order, one of them
    /// before the other (a lookup can bring a newer identity before its event): in between,
    /// each name resolves to at most one account, and the account whose row lost its name is a
    /// miss that one lookup refreshes. The late events then change nothing.
    @Test(arguments: [true, false])
    func swappedUsernamesResolveToOneAccountInEitherOrder(aliceFirst: Bool) async throws {
        let f = try await ProfileFixture()
        let alice = try await f.register("alice")
        let bob = try await f.register("bob")
        try await f.auth.rename(alice.id, to: "swap.tmp", publish: false)
        let bobNow = try await f.auth.rename(bob.id, to: "alice", publish: false)
        let aliceNow = try await f.auth.rename(alice.id, to: "bob", publish: false)
        let (first, second) = aliceFirst ? (aliceNow, bobNow) : (bobNow, aliceNow)

        try await apply(f, first)
        let names = ["alice", "bob", "swap.tmp"]
        #expect(try await Self.holders(f, names).values.allSatisfy { $0 <= 1 })
        // The first one's new name is its alone; the other's row lost that name: a miss.
        #expect(try await Self.resolve(f, [first.username])[first.username] == first.id)
        let stale = try await f.database.read {
            try $0.scalar("SELECT COUNT(*) FROM identities WHERE id = \(second.id) AND username IS NULL")
        }
        #expect(stale == 1)
        #expect(try await Self.resolve(f, [second.username])[second.username] == .some(nil))

        // Reading the stale account asks AuthService once and brings its current identity.
        let lookupsBefore = f.auth.lookups.count
        let refreshed = try await f.call(Profile.GetMe.self, .init(userId: second.id))
        #expect(refreshed.username == second.username)
        #expect(f.auth.lookups.count == lookupsBefore + 1 && f.auth.lookups.last?.ids == [second.id])
        #expect(try await Self.resolve(f, names) == ["alice": bob.id, "bob": alice.id, "swap.tmp": nil])
        #expect(try await Self.holders(f, names).values.allSatisfy { $0 <= 1 })

        // The events arrive late, in order: none is newer than what the replica has.
        let replica = f.app.replica
        let changed = try await f.database.write { tx in
            try [
                Identity(id: alice.id, username: "swap.tmp", email: alice.email, version: 2),
                bobNow, aliceNow,
            ].map { try replica.apply($0, in: tx) }
        }
        #expect(changed == [false, false, false])
        #expect(try await Self.resolve(f, names) == ["alice": bob.id, "bob": alice.id, "swap.tmp": nil])
        // And ProfileService shows it: each header names its account, profiles kept.
        #expect(try await f.app.profiles.header("alice").user.id == bob.id)
        #expect(try await f.app.profiles.header("bob").user.id == alice.id)
        #expect(try await f.call(Profile.GetMe.self, .init(userId: alice.id)).joinDate == alice.joinDate)
    }

    /// The same swap learnt only from AuthService's events (lookups find nobody), applied by a
    /// real `EventSubscriber` in-process, with either account moving first: after every event
    /// each name resolves to at most one account, and in the end each to its new owner.
    @Test(arguments: [true, false])
    func aSwapThroughEventsKeepsEveryNameOnOneAccount(aliceMovesFirst: Bool) async throws {
        let f = try await ProfileFixture()
        f.auth.answerLookups(false)
        let subscriber = EventSubscriber(
            producer: .auth, endpoint: f.auth.eventsEndpoint, context: f.zmq, replay: f.authClient, database: f.database,
            logger: Logger(service: "test", minimum: .error))
        f.app.replica.subscribe(subscriber)
        let running = Task { try await subscriber.run() }
        defer { running.cancel() }

        /// Waits until the replica applied the stand-in's newest event.
        func caughtUp() async throws {
            let head = try await f.auth.head()
            try await eventually("the replica applied auth event \(head)") {
                try await f.database.read { try $0.scalar("SELECT seq FROM event_cursor WHERE producer = 'auth'") } == head
            }
        }
        let names = ["alice", "bob", "swap.tmp"]
        let alice = try await f.auth.register("alice")
        let bob = try await f.auth.register("bob")
        try await caughtUp()
        #expect(try await Self.resolve(f, names) == ["alice": alice.id, "bob": bob.id, "swap.tmp": nil])
        let (mover, other) = aliceMovesFirst ? (alice, bob) : (bob, alice)
        for (id, name) in [(mover.id, "swap.tmp"), (other.id, mover.username), (mover.id, other.username)] {
            try await f.auth.rename(id, to: name)
            try await caughtUp()
            #expect(try await Self.holders(f, names).values.allSatisfy { $0 <= 1 }, "after \(id) took \(name)")
            #expect(try await Self.resolve(f, [name])[name] == id, "after \(id) took \(name)")
        }
        #expect(try await Self.resolve(f, names) == ["alice": bob.id, "bob": alice.id, "swap.tmp": nil])
        // Profiles were created when the accounts entered the replica, and follow the names.
        #expect(try await f.app.profiles.header("alice").user.id == bob.id)
        #expect(try await f.app.profiles.header("bob").user.id == alice.id)
        #expect(f.auth.lookups.isEmpty, "everything came from the events")
    }

    /// Two events for the same account out of order (a replay after a newer lookup): the older
    /// never overwrites the newer, and a username taken by a newer owner is never given back.
    @Test func anOlderIdentityNeverOverwritesANewerOne() async throws {
        let f = try await ProfileFixture()
        let alice = try await f.register("alice")
        let v3 = Identity(id: alice.id, username: "alice3", email: "a3@example.com", version: 3)
        try await apply(f, v3)
        try await apply(f, Identity(id: alice.id, username: "alice2", email: "a2@example.com", version: 2))
        let me = try await f.call(Profile.GetMe.self, .init(userId: alice.id))
        #expect(me.username == "alice3" && me.email == "a3@example.com")
        #expect(try await Self.resolve(f, ["alice2", "alice"]) == ["alice2": nil, "alice": nil])
    }

    /// With AuthService unreachable the replica still serves what it knows, and a miss is 503
    /// (AuthService could not be asked), never a 404 or an `unknown_user` that would claim the
    /// account does not exist.
    @Test func aMissWhileAuthServiceIsDownIsUnavailableNotUnknown() async throws {
        let f = try await ProfileFixture()
        let alice = try await f.register("alice", name: "Alice")
        // The same database served by an app whose AuthService endpoint has nobody listening.
        let down = try RPCClient(
            service: "auth", endpoint: "tcp://127.0.0.1:1", context: f.zmq, logger: Logger(service: "test", minimum: .error),
            defaultTimeoutMs: 2_000)
        defer { down.shutdown() }
        let app = try ProfileApp(configuration: ProfileConfiguration(), database: f.database, auth: down)
        #expect(try await app.profiles.require(alice.id).name == "Alice")
        #expect(try await app.profiles.header("alice").user.id == alice.id)
        let unavailable: Set<Int> = [503, 504]
        let missById = await serviceError { try await app.profiles.require(Me.unknown.id) }
        #expect(missById.map { unavailable.contains($0.status) } == true, "\(String(describing: missById))")
        let missByName = await serviceError { try await app.profiles.header("ghost") }
        #expect(missByName.map { unavailable.contains($0.status) } == true, "\(String(describing: missByName))")
        let tag = await serviceError {
            try await app.posts.createPost(
                .init(
                    ownerId: alice.id, postType: "photo", mediaURL: "https://x.example/m.jpg",
                    thumbnailURL: "https://x.example/t.jpg", caption: nil, taggedUsernames: ["ghost"]))
        }
        #expect(tag.map { unavailable.contains($0.status) } == true, "\(String(describing: tag))")
        let rename = await serviceError {
            try await app.profiles.updateMe(
                .init(userId: alice.id, name: "Changed", username: "alice2"), f.context(Profile.UpdateMe.type))
        }
        #expect(rename.map { unavailable.contains($0.status) } == true, "\(String(describing: rename))")
        #expect(try await app.profiles.require(alice.id).name == "Alice")
        #expect(try await f.eventTypes().isEmpty)
    }
}
