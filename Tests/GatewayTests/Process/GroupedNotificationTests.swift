import Foundation
import Harness
import TestSupport
import Testing
import Wire

/// Grouped notifications and the badge over HTTP against the four real executables (either
/// engine): groups of likes, comments and follows with their texts, singles, the stream's
/// `groupKey`, read marks and read-all, unlike / unfollow / post deletion, a rename, and paging
/// while another client writes. The 1,000-liker group and follows across two UTC days (the
/// clock is set through `createdAt`) are in `NotificationGroupTests`, in process.
@Suite(.serialized)
struct GroupedNotificationTests {
    static let image = "https://images.example.com/p/1.jpg"

    struct TimedOut: Error { var what: String }

    /// Every group of `token`'s user, paging `limit` at a time.
    static func groups(_ http: HTTPClient, _ token: String, limit: Int = 100) throws -> [[String: Any]] {
        var items: [[String: Any]] = []
        var cursor: String?
        repeat {
            let page = try http.request(
                "GET", "/v1/notifications/groups?limit=\(limit)" + (cursor.map { "&cursor=\($0)" } ?? ""), token: token)
            #expect(page.status == 200, "\(page.text)")
            items += page.object["items"] as? [[String: Any]] ?? []
            cursor = page.object["nextCursor"] as? String
        } while cursor != nil
        return items
    }

    /// The whole flat list.
    static func flat(_ http: HTTPClient, _ token: String) throws -> [[String: Any]] {
        var items: [[String: Any]] = []
        var cursor: String?
        repeat {
            let page = try http.request(
                "GET", "/v1/notifications?limit=100" + (cursor.map { "&cursor=\($0)" } ?? ""), token: token)
            items += page.object["items"] as? [[String: Any]] ?? []
            cursor = page.object["nextCursor"] as? String
        } while cursor != nil
        return items
    }

    /// Reads the groups until `done` holds for them (events are applied asynchronously), or
    /// throws after 60 s.
    static func groups(
        _ http: HTTPClient, _ token: String, until done: ([[String: Any]]) -> Bool
    ) async throws -> [[String: Any]] {
        let deadline = Timestamp.nowMs() + 60_000
        while true {
            let items = try groups(http, token)
            if done(items) { return items }
            guard Timestamp.nowMs() < deadline else { throw TimedOut(what: "groups: \(items)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    static func count(_ items: [[String: Any]], _ key: String) -> Int? {
        items.first { $0["key"] as? String == key }?["count"] as? Int
    }

    /// The groups, the flat list and the badge agree: each group's count is the number of
    /// notifications carrying its key; the unread count is the flat list's unread ones.
    static func expectAgreement(_ http: HTTPClient, _ token: String) throws {
        let flat = try flat(http, token)
        let groups = try groups(http, token, limit: 3)
        var members: [String: Int] = [:]
        for n in flat { members[n["groupKey"] as? String ?? "?", default: 0] += 1 }
        #expect(Set(groups.compactMap { $0["key"] as? String }) == Set(members.keys))
        for g in groups { #expect(g["count"] as? Int == members[g["key"] as? String ?? ""], "\(g)") }
        let unread = flat.filter { $0["read"] as? Bool == false }.count
        let badge = try http.request("GET", "/v1/notifications/unread-count", token: token)
        #expect(badge.status == 200 && badge.object["unreadCount"] as? Int == unread, "\(badge.text) vs \(unread)")
    }

    @Test func groupsTextsReadMarksRemovalsAndARename() async throws {
        let cluster = try await EndToEndTests.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (owner, _) = try EndToEndTests.register(http, "g\(tag)o")
        var fans: [(name: String, token: String)] = []
        for i in 0..<6 {
            let name = "g\(tag)f\(i)"
            fans.append((name, try EndToEndTests.register(http, name).0))
        }
        let stream = try SSEClient(port: cluster.gatewayPort, token: owner)
        #expect(await stream.waitUntilOpen())
        let post = try #require(try EndToEndTests.createPosts(http, owner, count: 1).first)

        // Likes one at a time (their order is the actors' order), then comments and follows.
        for (i, fan) in fans.enumerated() {
            #expect(try http.request("PUT", "/v1/posts/\(post)/like", token: fan.token).status == 200)
            #expect(await stream.waitFor(count: i + 1))
        }
        #expect(
            try http.request("POST", "/v1/posts/\(post)/comments", token: fans[0].token, json: ["text": "one"]).status == 201)
        #expect(
            try http.request("POST", "/v1/posts/\(post)/comments", token: fans[1].token, json: ["text": "two"]).status == 201)
        for fan in fans.prefix(2) {
            #expect(try http.request("PUT", "/v1/users/g\(tag)o/follow", token: fan.token, json: [:]).status == 200)
        }
        // A tag is a single.
        let tagged = try http.request(
            "POST", "/v1/posts", token: fans[5].token,
            json: ["postType": "photo", "mediaURL": Self.image, "thumbnailURL": Self.image, "taggedUsernames": ["g\(tag)o"]])
        #expect(tagged.status == 201)
        #expect(await stream.waitFor(count: 11), "stream has \(stream.events.count)")
        let day = String(Timestamp.now().prefix(10))
        // The stream's notifications carry their group keys.
        #expect(stream.events.first?.json["groupKey"] as? String == "like:\(post)")
        #expect(stream.events.last?.json["groupKey"] as? String == "tag:\(stream.events.last?.json["id"] as? String ?? "")")

        var groups = try await Self.groups(http, owner) { $0.count == 4 }
        #expect(groups.map { $0["type"] as? String } == ["tag", "follow", "comment", "like"])
        #expect(groups.map { $0["key"] as? String }.dropFirst() == ["follow:\(day)", "comment:\(post)", "like:\(post)"])
        #expect(groups.map { $0["count"] as? Int } == [1, 2, 2, 6])
        #expect(
            groups.map { $0["text"] as? String } == [
                "g\(tag)f5 tagged you in a post.", "g\(tag)f1 and g\(tag)f0 started following you.",
                "g\(tag)f1 and g\(tag)f0 commented on your photo.", "g\(tag)f5, g\(tag)f4 and 4 others liked your photo.",
            ])
        let like = groups[3]
        #expect(
            (like["actors"] as? [[String: Any]])?.compactMap { $0["username"] as? String } == [
                "g\(tag)f5", "g\(tag)f4", "g\(tag)f3",
            ])
        #expect((like["post"] as? [String: Any])?["id"] as? String == post)
        #expect(like["read"] as? Bool == false && like["latestSeq"] as? Int == 6)
        #expect(groups[1]["followState"] is NSNull && groups[1]["post"] is NSNull)
        try Self.expectAgreement(http, owner)

        // Read marks: up to a seq, then everything; the body takes exactly one of the two.
        var read = try http.request("POST", "/v1/notifications/read", token: owner, json: ["upToSeq": 6])
        #expect(read.status == 200 && read.object["unreadCount"] as? Int == 5)
        groups = try Self.groups(http, owner)
        #expect(groups.map { $0["read"] as? Bool } == [false, false, false, true])
        for (body, field) in [
            (["all": true, "upToSeq": 3] as [String: Any], "all"), (["all": false], "all"), ([:], "upToSeq"),
        ] {
            let bad = try http.request("POST", "/v1/notifications/read", token: owner, json: body)
            let named = (bad.object["errors"] as? [[String: Any]])?.first?["field"] as? String
            #expect(bad.status == 400 && named == field, "\(body): \(bad.status) \(bad.text)")
        }
        read = try http.request("POST", "/v1/notifications/read", token: owner, json: ["all": true])
        #expect(read.status == 200 && read.object["unreadCount"] as? Int == 0)
        #expect(try Self.groups(http, owner).allSatisfy { $0["read"] as? Bool == true })

        // An unlike and an unfollow leave no trace; a rename shows in every group.
        #expect(try http.request("DELETE", "/v1/posts/\(post)/like", token: fans[5].token).status == 200)
        #expect(try http.request("DELETE", "/v1/users/g\(tag)o/follow", token: fans[1].token).status == 200)
        #expect(
            try http.request("PATCH", "/v1/me/profile", token: fans[4].token, json: ["username": "g\(tag)renamed"]).status
                == 200)
        groups = try await Self.groups(http, owner) { items in
            Self.count(items, "like:\(post)") == 5
                && items.contains { ($0["text"] as? String)?.hasPrefix("g\(tag)renamed, g\(tag)f3 and 3 others") == true }
        }
        #expect(Self.count(groups, "follow:\(day)") == 1)
        #expect(
            groups.first { $0["key"] as? String == "follow:\(day)" }?["text"] as? String == "g\(tag)f0 started following you.")
        #expect(groups.first { $0["key"] as? String == "follow:\(day)" }?["followState"] as? String == "not_following")
        try Self.expectAgreement(http, owner)

        // Deleting the post removes its groups.
        #expect(try http.request("DELETE", "/v1/posts/\(post)", token: owner).status == 204)
        groups = try await Self.groups(http, owner) { $0.count == 2 }
        #expect(groups.map { $0["type"] as? String } == ["tag", "follow"])
        try Self.expectAgreement(http, owner)
        let badge = try http.request("GET", "/v1/notifications/unread-count", token: owner)
        #expect(badge.object["unreadCount"] as? Int == 0)
    }

    @Test func pagingWhileAnotherClientWritesNeitherRepeatsNorSkips() async throws {
        let cluster = try await EndToEndTests.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (owner, _) = try EndToEndTests.register(http, "q\(tag)o")
        let (fanA, _) = try EndToEndTests.register(http, "q\(tag)a")
        let (fanB, _) = try EndToEndTests.register(http, "q\(tag)b")
        let posts = try EndToEndTests.createPosts(http, owner, count: 12)
        for post in posts { #expect(try http.request("PUT", "/v1/posts/\(post)/like", token: fanA).status == 200) }
        _ = try await Self.groups(http, owner) { $0.count == 12 }

        var seen: [String] = []
        var page = try http.request("GET", "/v1/notifications/groups?limit=3", token: owner)
        seen += (page.object["items"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
        var round = 0
        while let cursor = page.object["nextCursor"] as? String {
            // Another client likes a post shown already and one still to come: both move to the top.
            #expect(try http.request("PUT", "/v1/posts/\(posts[11 - round])/like", token: fanB).status == 200)
            #expect(try http.request("PUT", "/v1/posts/\(posts[round])/like", token: fanB).status == 200)
            page = try http.request("GET", "/v1/notifications/groups?limit=3&cursor=\(cursor)", token: owner)
            #expect(page.status == 200)
            seen += (page.object["items"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
            round += 1
        }
        #expect(seen.count == Set(seen).count, "repeated: \(seen)")
        #expect(Set(seen) == Set(posts.map { "like:\($0)" }))
        _ = try await Self.groups(http, owner) { items in
            items.compactMap { $0["count"] as? Int }.reduce(0, +) == 12 + 2 * round
        }
        try Self.expectAgreement(http, owner)
    }
}
