import Foundation
import Harness
import Messages
import Storage
import Support
import Testing
import Wire

@testable import NotificationService

/// A device never outlives its session, and a token cannot be taken over (issue 37, points 3
/// and 5), in process on the engine `TEST_STORAGE_ENGINE` names. The race of a registration
/// and a logout is made deterministic: one of the two is held inside its transaction (on a
/// second `Database` of the same database, as a second replica has) while the other runs, then
/// released; whichever held first, no device of the ended session remains.
@Suite(.serialized)
struct DeviceTrustTests {
    static let phone = "e621e1f8-c36c-495a-93fc-0c247a3e6e5f"
    static let now: Int64 = 1_800_000_000_000

    /// A store on a fresh database, and a second `Database` on the same one (another replica).
    struct Replicas {
        let directory = makeTemporaryDirectory("device-trust")
        let first: Database
        let second: Database
        var store: DeviceStore { DeviceStore(database: first, clock: { DeviceTrustTests.now }) }

        init() throws {
            first = try TestDatabase.open(in: directory)
            second = try TestDatabase.open(in: directory)
        }

        func devices(_ user: String) async throws -> [Notifications.Device] {
            try await store.list(userId: user, page: .init(limit: 100)).items
        }
    }

    static func request(_ user: String, session: String, token: Int = 1, installation: String? = phone)
        -> Notifications.RegisterDevice.Request
    {
        .init(
            userId: user, sessionId: session, token: String(repeating: "ab", count: 31) + String(format: "%02x", token),
            environment: "sandbox", installationId: installation)
    }

    /// Ends `sessions` of `user` as `auth.session.revoked` does, in `tx`.
    static func revoke(_ user: String, _ sessions: [String], in tx: Transaction) throws {
        try DeviceStore.revoke(userId: user, sessionIds: sessions, until: now + 86_400_000, now: now, in: tx)
    }

    /// Runs `body` in a write transaction of `database` that is held open, after `body`, until
    /// `release` is signalled. - Returns: the task that finishes it.
    static func hold(
        _ database: Database, _ release: DispatchSemaphore, _ body: @escaping @Sendable (Transaction) throws -> Void
    ) -> (started: DispatchSemaphore, task: Task<Void, any Error>) {
        let started = DispatchSemaphore(value: 0)
        let task = Task {
            try await database.write { tx in
                try body(tx)
                started.signal()
                release.wait()
            }
        }
        return (started, task)
    }

    /// Waits until a statement of another connection is blocked on a lock (PostgreSQL); on
    /// SQLite the second writer waits for the file's write lock whatever the test does.
    static func untilBlocked(_ r: Replicas) async throws { try await untilBlocked(r.directory) }

    /// `untilBlocked` for the notification database in `directory`.
    static func untilBlocked(_ directory: String) async throws {
        guard TestStorage.engine == .postgres else { return }
        let url = try TestStorage.url(directory, "notification")
        let name = String(url.split(separator: "/").last?.prefix { $0 != "?" } ?? "")
        let admin = try PostgresConnection(url: url)
        try await eventually("a transaction waiting for the session's row lock") {
            try admin.scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = \(name) AND wait_event_type = 'Lock'") ?? 0 > 0
        }
    }

    @Test func aSessionThatEndedRegistersNoDeviceAndItsDevicesGo() async throws {
        let r = try Replicas()
        _ = try await r.store.register(Self.request("u-a", session: "s1", token: 1))
        _ = try await r.store.register(Self.request("u-a", session: "s2", token: 2))
        try await r.first.write { tx in try Self.revoke("u-a", ["s1"], in: tx) }
        #expect(try await r.devices("u-a").count == 1)
        let refused = await #expect(throws: ServiceError.self) {
            _ = try await r.store.register(Self.request("u-a", session: "s1", token: 3))
        }
        #expect(refused?.status == 401 && refused?.code == "invalid_token")
        #expect(try await r.devices("u-a").count == 1)
        _ = try await r.store.register(Self.request("u-a", session: "s2", token: 3))
        #expect(try await r.devices("u-a").count == 2)
    }

    /// The revocation holds the session's row; the registration of another replica waits for
    /// it, then finds the session ended.
    @Test func aRegistrationWaitingOnALogoutIsRefused() async throws {
        let r = try Replicas()
        let release = DispatchSemaphore(value: 0)
        let (started, held) = Self.hold(r.first, release) { tx in try Self.revoke("u-a", ["s1"], in: tx) }
        await onThread { started.wait() }
        let other = DeviceStore(database: r.second, clock: { Self.now })
        let registering = Task { try await other.register(Self.request("u-a", session: "s1")) }
        try await Self.untilBlocked(r)
        release.signal()
        try await held.value
        let result = await registering.result
        #expect(throws: ServiceError.self) { _ = try result.get() }
        #expect(try await r.devices("u-a").isEmpty)
    }

    /// The registration holds the session's row with its device inserted; the logout of another
    /// replica waits for it, then removes that device.
    @Test func aLogoutWaitingOnARegistrationRemovesItsDevice() async throws {
        let r = try Replicas()
        let release = DispatchSemaphore(value: 0)
        let (started, held) = Self.hold(r.first, release) { tx in
            _ = try DeviceStore.register(Self.request("u-a", session: "s1"), now: Self.now, in: tx)
        }
        await onThread { started.wait() }
        let revoking = Task { try await r.second.write { tx in try Self.revoke("u-a", ["s1"], in: tx) } }
        try await Self.untilBlocked(r)
        release.signal()
        try await held.value
        try await revoking.value
        #expect(try await r.devices("u-a").isEmpty)
    }

    /// A token another account holds moves only from the same installation, at most
    /// `maxMovesPerHour` an hour per account; otherwise 409 and nothing changes.
    @Test func aTokenMovesOnlyFromTheSameInstallation() async throws {
        let r = try Replicas()
        let first = try await r.store.register(Self.request("u-a", session: "sa", token: 1))
        for installation in [nil, "0f3c2b1a-0000-4000-8000-000000000001"] {
            let taken = await #expect(throws: ServiceError.self) {
                _ = try await r.store.register(Self.request("u-b", session: "sb", token: 1, installation: installation))
            }
            #expect(taken?.status == 409 && taken?.code == "device_token_in_use")
            #expect(try await r.devices("u-a").map(\.id) == [first.id])
            #expect(try await r.devices("u-b").isEmpty)
        }
        let moved = try await r.store.register(Self.request("u-b", session: "sb", token: 1))
        #expect(try await r.devices("u-a").isEmpty)
        #expect(try await r.devices("u-b").map(\.id) == [moved.id])
        // Moves to one account are limited: the 11th within the hour is 429.
        for i in 2...DeviceStore.maxMovesPerHour {
            _ = try await r.store.register(Self.request("u-\(i)", session: "s\(i)", token: i))
            _ = try await r.store.register(Self.request("u-b", session: "sb", token: i))
        }
        _ = try await r.store.register(Self.request("u-z", session: "sz", token: 99))
        let limited = await #expect(throws: ServiceError.self) {
            _ = try await r.store.register(Self.request("u-b", session: "sb", token: 99))
        }
        #expect(limited?.status == 429 && (limited?.retryAfter ?? 0) > 0)
        #expect(try await r.devices("u-z").count == 1)
    }
}
