import Foundation
import Harness
import Messages
import TestSupport
import Testing
import Wire

@testable import NotificationService

/// Notification ids are opaque (`NotificationIds`): no visible counter, decodable by the
/// service, forgeries refused, stable across restarts.
struct NotificationIdTests {
    static let secret = Array(UInt8(0)..<32)

    /// SipHash-2-4 of the 8 bytes 00…07 under the key 00…0f (the reference implementation's
    /// vector for an 8-byte message; its 15-byte vector is the paper's a129ca6149be45e5).
    @Test func theRoundFunctionIsSipHash24() {
        #expect(
            NotificationIds.sipHash(0x0706_0504_0302_0100, key: (0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908))
                == 0x93f5_f579_9a93_2462)
    }

    @Test func idsRoundTrip() {
        let ids = NotificationIds(secret: Self.secret)
        let bound = NotificationIds.bound
        for (key, seq) in [(0, 0), (1, 1), (884, 1), (885, 1), (1, bound - 1), (bound - 1, bound - 1), (123_456, 42)] {
            let id = ids.id(recipient: Int64(key), seq: Int64(seq))
            #expect(id.count == 22 && id.utf8.allSatisfy { $0 < 128 && $0 != UInt8(ascii: "=") }, "\(id)")
            #expect(ids.decode(id).map { [$0.recipient, $0.seq] } == [Int64(key), Int64(seq)], "\(id)")
        }
    }

    /// Anything the codec did not make is refused, not decoded to some (key, seq), and never
    /// traps: other lengths, other alphabets, one character changed, another database's secret.
    @Test func aForgedIdIsRefused() {
        let ids = NotificationIds(secret: Self.secret)
        let other = NotificationIds(secret: Array(repeating: 7, count: 32))
        let real = ids.id(recipient: 884, seq: 1)
        #expect(ids.decode(real) != nil)
        #expect(other.decode(real) == nil)
        for forged in [
            "", "884-1", "885-1", String(repeating: "A", count: 21), String(repeating: "_", count: 22),
            String(repeating: "A", count: 23), real + "A", String(real.dropLast()) + "=", "é" + real.dropFirst(2),
        ] {
            #expect(ids.decode(forged) == nil, "\(forged)")
        }
        // Every one-character change of a real id.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var accepted = 0
        for i in 0..<22 {
            for c in alphabet {
                var chars = Array(real)
                guard chars[i] != c else { continue }
                chars[i] = c
                if ids.decode(String(chars)) != nil { accepted += 1 }
            }
        }
        #expect(accepted == 0)
    }

    /// The first notification of each of three users who signed up one after another: their
    /// ids share no counter (no common run, most characters differ), and they decode to the
    /// recipients' keys.
    @Test func consecutiveUsersIdsShareNoVisibleCounter() async throws {
        let directory = makeTemporaryDirectory("notification-ids")
        let database = try TestDatabase.open(in: directory)
        let writer = NotificationWriter(delivery: .none)
        var stored: [Notifications.Notification] = []
        for user in ["u-884", "u-885", "u-886"] {
            let n = try await database.write { tx in
                try writer.insert(
                    NewNotification(
                        recipientId: user, actorId: "u-actor", type: .follow, detail: nil, post: nil,
                        createdAt: Timestamp.nowMs()),
                    in: tx)
            }
            stored.append(try #require(n))
        }
        #expect(stored.map(\.seq) == [1, 1, 1])
        let ids = stored.map(\.id)
        // The secret is random per database, so a check must not fail by chance: "-1" is two
        // base64url characters and turns up in about 1 random id in 200; a user id's five
        // characters in about 1 in 60 million.
        for (id, user) in zip(ids, ["u-884", "u-885", "u-886"]) {
            #expect(id.count == 22 && !id.contains(user) && !id.contains("\(user)-1"), "\(id)")
        }
        for (a, b) in [(0, 1), (1, 2), (0, 2)] {
            let differing = zip(ids[a], ids[b]).filter { $0 != $1 }.count
            #expect(differing >= 12, "\(ids[a]) \(ids[b])")
            #expect(!ids[a].hasPrefix(String(ids[b].prefix(4))) && !ids[a].hasSuffix(String(ids[b].suffix(4))))
        }
        let codec = try await database.read { try NotificationIds.load(on: $0) }
        let keys = try await database.read { c in
            try ["u-884", "u-885", "u-886"].map { try #require(try Keys.existingUser($0, on: c)) }
        }
        #expect(ids.map { codec.decode($0)?.recipient } == keys)

        // The same ids after a restart (the secret is in the database), in lists and deliveries.
        let reopened = try TestDatabase.open(in: directory)
        let listed = try await SQLNotificationStore(database: reopened).list(recipientId: "u-885", page: .init())
        #expect(listed.items.map { $0.id } == [ids[1]])
        #expect(try await reopened.read { try NotificationIds.load(on: $0) } == codec)
        // Another database has another secret.
        let elsewhere = try TestDatabase.make()
        #expect(try await elsewhere.read { try NotificationIds.load(on: $0) } != codec)
    }
}
