import Foundation
import Messages
import Wire

/// `Benchmarks json [iterations]`: encodes the shapes the services send most (a page of 20
/// notifications with their actors, one event envelope, one PublicUser) with `JSONWriter`
/// (`WireJSON.encode`) and, in the same run, with Foundation's `JSONEncoder` (`.sortedKeys`)
/// as the peer, and a request and a reply envelope as the hosts write them (`encoded()`); prints
/// encodes per second, ns per encode and the ratio. Then decodes the same bytes
/// with `WireJSON.decode` (our strict parser and tree decoder) beside Foundation's `JSONDecoder`.
/// In-process, no services.
enum JSONBenchmark {
    struct Post: Codable { var id: String, thumbnailURL: String }
    struct Item: Codable {
        var id: String
        var seq: Int64
        var type: String
        var text: String
        var createdAt: String
        var read: Bool
        var actor: PublicUser
        var post: Post?
        var followState: String?
    }
    struct Page: Codable {
        var items: [Item]
        var nextCursor: String?
        var unreadCount: Int
    }
    struct Body: Codable { var followerId: String, followeeId: String, following: Bool, notifyPosts: Bool }

    static func run(_ options: [String]) throws {
        let iterations = options.first.flatMap { Int($0) } ?? 20_000
        let user = PublicUser(
            id: RandomID.make(), username: "alice", name: "앨리스 Alice", bio: "photos \"and\" more", profilePhotoURL: nil)
        func item(_ i: Int) -> Item {
            let even = i % 2 == 0
            let post: Post? = even ? Post(id: RandomID.make(), thumbnailURL: "/media/x/square320") : nil
            return Item(
                id: RandomID.make(), seq: Int64(1000 + i), type: even ? "like" : "follow", text: "alice liked your photo.",
                createdAt: "2026-12-02T07:00:00.123Z", read: i > 4, actor: user, post: post,
                followState: even ? nil : "following")
        }
        let page = Page(items: (0..<20).map(item), nextCursor: "1000", unreadCount: 5)
        let envelope = EventEnvelope(
            producer: "notification", seq: 7, type: "follow.changed", time: "2026-11-29T18:04:50.123Z",
            body: Body(followerId: "u1", followeeId: "u2", following: true, notifyPosts: false))
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]

        /// Times `n` runs of ours and of Foundation's and prints the row.
        func row(_ label: String, _ n: Int, ours: () throws -> Int, theirs: () throws -> Int) rethrows {
            var sink = 0
            let clock = ContinuousClock()
            let a = seconds(try clock.measure { for _ in 0..<n { sink &+= try ours() } })
            let b = seconds(try clock.measure { for _ in 0..<n { sink &+= try theirs() } })
            print(
                label.padding(toLength: 16, withPad: " ", startingAt: 0)
                    + String(
                        format: " %12.0f   %16.0f   %9.0f   %13.0f   %5.2fx", Double(n) / a, Double(n) / b, a / Double(n) * 1e9,
                        b / Double(n) * 1e9, b / a), terminator: sink == 0 ? " \n" : "\n")
        }
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        func encodeRow<T: Encodable>(_ label: String, _ value: T, _ n: Int) throws {
            try row(label, n, ours: { try WireJSON.encode(value).count }, theirs: { try foundation.encode(value).count })
        }
        let decoder = JSONDecoder()
        func decodeRow<T: Codable>(_ label: String, _ value: T, _ n: Int) throws {
            let bytes = try WireJSON.encode(value)
            let data = Data(bytes)
            try row(
                label, n, ours: { MemoryLayout.size(ofValue: try WireJSON.decode(T.self, from: bytes)) },
                theirs: { MemoryLayout.size(ofValue: try decoder.decode(T.self, from: data)) })
        }
        print("shape            writer enc/s   Foundation enc/s   writer ns   Foundation ns   ratio")
        try encodeRow("page of 20", page, iterations / 10)
        try encodeRow("event envelope", envelope, iterations)
        try encodeRow("PublicUser", user, iterations)
        // The envelopes as the hosts write them (`encoded()`: the envelope's members written
        // directly around the body) beside Foundation encoding the same value.
        let request = RequestEnvelope(
            id: RandomID.make(), type: "profile.get_header", deadline: 1_780_000_000_000, trace: RandomID.make(),
            body: Body(followerId: "u1", followeeId: "u2", following: true, notifyPosts: false))
        let reply = ReplyEnvelope(id: request.id, type: request.type, body: user, error: nil)
        try row(
            "request envelope", iterations, ours: { try request.encoded().count },
            theirs: { try foundation.encode(request).count })
        try row(
            "reply envelope", iterations, ours: { try reply.encoded().count }, theirs: { try foundation.encode(reply).count })
        print("shape            wire dec/s     Foundation dec/s   wire ns     Foundation ns   ratio")
        try decodeRow("page of 20", page, iterations / 10)
        try decodeRow("event envelope", envelope, iterations)
        try decodeRow("PublicUser", user, iterations)
    }
}
