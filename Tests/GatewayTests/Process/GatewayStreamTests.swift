import Foundation
import Messages
import TestSupport
import Testing
import Wire

/// The notification stream and list enrichment, against the real Gateway executable with
/// in-process fake services.
@Suite struct GatewayStreamTests {
    @Test func liveEventsArriveInOrderWithActors() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        h.fakes.addUser("bob")
        let stream = try SSEClient(port: h.port, token: alice, lastEventId: "0")
        try await h.fakes.notify("alice", from: "bob", type: .like)
        try await h.fakes.notify("alice", from: "bob", type: .follow)
        #expect(await stream.waitFor(count: 2))
        #expect(stream.status == 200)
        let events = stream.events
        #expect(events.map(\.id) == ["1", "2"])
        #expect(events.map(\.event) == ["notification", "notification"])
        #expect(events[0].json["text"] as? String == "bob liked your photo.")
        #expect((events[0].json["actor"] as? [String: Any])?["username"] as? String == "bob")
        #expect(events[0].json["followState"] is NSNull)
        #expect((events[0].json["post"] as? [String: Any])?["id"] as? String == "p1")
        #expect(events[1].json["followState"] as? String == "not_following")
        #expect(events[1].json["post"] is NSNull)
        #expect(stream.comments >= 1)
        stream.close()
    }

    /// A Last-Event-ID above the recipient's head (an id from another history, e.g. before a
    /// database reset) resumes from the head: the next notification is sent, not taken for one
    /// the client already has.
    @Test func aResumePointAboveTheHeadResumesFromTheHead() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        h.fakes.addUser("bob")
        let stream = try SSEClient(port: h.port, token: alice, lastEventId: "100000")
        #expect(await stream.waitUntilOpen())
        try await h.fakes.notify("alice", from: "bob", type: .like)
        try await h.fakes.notify("alice", from: "bob", type: .follow)
        #expect(await stream.waitFor(count: 2), "stream has \(stream.events.count) events")
        #expect(stream.events.map(\.id) == ["1", "2"])
        stream.close()
    }

    /// Notifications that arrive together are enriched together: one `profile.users_by_ids`
    /// call per batch, not per event, and every stream still gets its own events in order.
    @Test func aBurstIsEnrichedInBatchesAndDeliveredInOrder() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        let carol = h.fakes.addUser("carol")
        let actors = ["bob", "dave", "erin"]
        for a in actors { h.fakes.addUser(a) }
        let aliceStream = try SSEClient(port: h.port, token: alice, lastEventId: "0")
        let carolStream = try SSEClient(port: h.port, token: carol, lastEventId: "0")
        // A first event on each stream, so both are live before the burst.
        try await h.fakes.notify("alice", from: "bob")
        try await h.fakes.notify("carol", from: "bob")
        #expect(await aliceStream.waitFor(count: 1))
        #expect(await carolStream.waitFor(count: 1))
        let lookupsBefore = h.fakes.calls(Profile.UsersByIds.type)
        let pairs = (0..<300).map { i in (recipient: i % 2 == 0 ? "alice" : "carol", actor: actors[i % 3]) }
        try await h.fakes.notifyBurst(pairs)
        #expect(await aliceStream.waitFor(count: 151))
        #expect(await carolStream.waitFor(count: 151))
        #expect(aliceStream.events.map(\.id) == (1...151).map(String.init))
        #expect(carolStream.events.map(\.id) == (1...151).map(String.init))
        let expectedActors = pairs.filter { $0.recipient == "alice" }.map(\.actor)
        #expect(
            aliceStream.events.dropFirst().map { ($0.json["actor"] as? [String: Any])?["username"] as? String }
                == expectedActors)
        let lookups = h.fakes.calls(Profile.UsersByIds.type) - lookupsBefore
        #expect(lookups >= 1 && lookups < 100)  // one per event would be 300
        aliceStream.close()
        carolStream.close()
    }

    @Test func resumeAfterLastEventIdSendsTheRestOnce() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        h.fakes.addUser("bob")
        for _ in 1...3 { try await h.fakes.notify("alice", from: "bob") }
        let stream = try SSEClient(port: h.port, token: alice, lastEventId: "1")
        #expect(await stream.waitFor(count: 2))
        try await h.fakes.notify("alice", from: "bob")
        #expect(await stream.waitFor(count: 3))
        #expect(stream.events.map(\.id) == ["2", "3", "4"])
        let since = try SSEClient(port: h.port, token: alice, path: "/v1/notifications/stream?since=3")
        #expect(await since.waitFor(count: 1))
        #expect(since.events.map(\.id) == ["4"])
        stream.close()
        since.close()
    }

    @Test func liveEventsKeepFlowingWhileProfileServiceIsDown() async throws {
        let h = try await GatewayHarness.start(["GATEWAY_STREAM_CHECK_MS": "200"])
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        h.fakes.addUser("bob")
        h.fakes.addUser("carol")
        let stream = try SSEClient(port: h.port, token: alice, lastEventId: "0")
        try await h.fakes.notify("alice", from: "bob")
        #expect(await stream.waitFor(count: 1))
        h.fakes.setProfileDown(true)
        // bob was seen: his last known profile is used.
        try await h.fakes.notify("alice", from: "bob", type: .follow)
        #expect(await stream.waitFor(count: 2))
        #expect((stream.events.last?.json["actor"] as? [String: Any])?["username"] as? String == "bob")
        // carol never was: her notification waits (and bob's after it, in order) until
        // ProfileService answers again; nothing is skipped.
        try await h.fakes.notify("alice", from: "carol")
        try await h.fakes.notify("alice", from: "bob")
        h.fakes.setProfileDown(false)
        #expect(await stream.waitFor(count: 4))
        #expect(stream.events.map(\.id) == ["1", "2", "3", "4"])
        #expect((stream.events[2].json["actor"] as? [String: Any])?["username"] as? String == "carol")
        stream.close()
    }

    // MARK: Routed delivery repairs what the transport loses

    /// The repairs a gateway made, from its metrics (`stream_repairs_total{outcome}`).
    func repairs(_ h: GatewayHarness, _ outcome: String) async throws -> Int {
        let text = try await h.request("GET", "/metrics").text
        let prefix = "stream_repairs_total{outcome=\"\(outcome)\"} "
        return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Int($0.dropFirst(prefix.count)) } ?? 0
    }

    /// Waits until the gateway has read `alice`'s notifications after the publisher's welcome
    /// (the first `notification.since` of a live-only stream): from then on, what it did not read
    /// reaches it only by subscription or by a repair.
    func waitUntilLive(_ h: GatewayHarness) async throws {
        let deadline = Timestamp.nowMs() + 60_000
        while h.fakes.calls(Notifications.NotificationsSince.type) < 1 && Timestamp.nowMs() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(h.fakes.calls(Notifications.NotificationsSince.type) >= 1)
    }

    /// A message lost in transit (a high-water mark, a reconnect) shows as a gap in seq: the
    /// gateway reads the missing one and delivers both in order. The heads check is off, so the
    /// gap alone must do it; with `failedReads`, that many reads of the gap fail first (as while
    /// NotificationService restarts) and the read is tried again shortly.
    @Test(arguments: [0, 2]) func aLostMessageIsReadBeforeTheOneAfterIt(failedReads: Int) async throws {
        let h = try await GatewayHarness.start(["GATEWAY_STREAM_CHECK_MS": "3600000"])
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        h.fakes.addUser("bob")
        let stream = try SSEClient(port: h.port, token: alice)
        #expect(await stream.waitUntilOpen())
        try await waitUntilLive(h)
        try await h.fakes.notify("alice", from: "bob")
        #expect(await stream.waitFor(count: 1))
        h.fakes.state.withLock { $0.failSinceReads = failedReads }
        try await h.fakes.notify("alice", from: "bob", type: .follow, deliver: false)
        try await h.fakes.notify("alice", from: "bob")
        #expect(await stream.waitFor(count: 3))
        #expect(stream.events.map(\.id) == ["1", "2", "3"])
        #expect(stream.events.map { $0.json["type"] as? String } == ["like", "follow", "like"])
        #expect(try await repairs(h, "filled") >= 1)
        #expect(try await repairs(h, "failed") >= failedReads)
        stream.close()
    }

    /// The last notification before a silence has nothing after it to show a gap: the periodic
    /// heads check finds it.
    @Test func theLastMessageBeforeASilenceArrivesThroughTheHeadsCheck() async throws {
        let h = try await GatewayHarness.start(["GATEWAY_STREAM_CHECK_MS": "200"])
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        h.fakes.addUser("bob")
        let stream = try SSEClient(port: h.port, token: alice)
        #expect(await stream.waitUntilOpen())
        try await waitUntilLive(h)
        try await h.fakes.notify("alice", from: "bob")
        #expect(await stream.waitFor(count: 1))
        try await h.fakes.notify("alice", from: "bob", type: .follow, deliver: false)
        #expect(await stream.waitFor(count: 2))
        #expect(stream.events.map(\.id) == ["1", "2"])
        #expect(try await repairs(h, "head_behind") >= 1)
        #expect(h.fakes.calls(Notifications.Heads.type) >= 1)
        stream.close()
    }

    /// A notification stored after the gateway read the head but published before its
    /// subscription took effect reaches no subscriber: the publisher's welcome (the
    /// subscription is active) makes the gateway read everything after the head. The heads
    /// check is off, so the welcome alone must do it.
    @Test func aNotificationRacingTheSubscriptionIsNotLost() async throws {
        let h = try await GatewayHarness.start(["GATEWAY_STREAM_CHECK_MS": "3600000"])
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        h.fakes.addUser("bob")
        try await h.fakes.notify("alice", from: "bob")  // seq 1, before the stream: not on it
        h.fakes.raceNextStreamStart("alice", from: "bob")  // seq 2, never published
        let stream = try SSEClient(port: h.port, token: alice)
        #expect(await stream.waitFor(count: 1))
        try await h.fakes.notify("alice", from: "bob", type: .follow)  // seq 3, published
        #expect(await stream.waitFor(count: 2))
        #expect(stream.events.map(\.id) == ["2", "3"])
        stream.close()
    }

    /// Streams of one recipient share one subscription; the last one closing ends it, and a
    /// new stream subscribes again.
    @Test func aRecipientsStreamsShareOneSubscription() async throws {
        let h = try await GatewayHarness.start(["GATEWAY_STREAM_CHECK_MS": "3600000"])
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        h.fakes.addUser("bob")
        let first = try SSEClient(port: h.port, token: alice)
        let second = try SSEClient(port: h.port, token: alice)
        #expect(await first.waitUntilOpen())
        #expect(await second.waitUntilOpen())
        #expect(h.fakes.calls(Notifications.StreamStart.type) == 1)
        try await h.fakes.notify("alice", from: "bob")
        #expect(await first.waitFor(count: 1))
        #expect(await second.waitFor(count: 1))
        first.close()
        second.close()
        try await waitUntilMetric(h, "stream_channels 0")
        let third = try SSEClient(port: h.port, token: alice)
        #expect(await third.waitUntilOpen())
        try await h.fakes.notify("alice", from: "bob", type: .follow)
        #expect(await third.waitFor(count: 1))
        #expect(third.events.map(\.id) == ["2"])
        #expect(h.fakes.calls(Notifications.StreamStart.type) == 2)
        third.close()
    }

    /// Waits until `/metrics` has the line `line`.
    func waitUntilMetric(_ h: GatewayHarness, _ line: String) async throws {
        let deadline = Timestamp.nowMs() + 60_000
        while Timestamp.nowMs() < deadline {
            if try await h.request("GET", "/metrics").text.split(separator: "\n").contains(Substring(line)) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("no metric line \(line)")
    }

    @Test func logoutClosesTheStreamAndRevokesTheToken() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        #expect(try await h.request("GET", "/v1/notifications", token: alice).status == 200)
        let stream = try SSEClient(port: h.port, token: alice)
        #expect(await stream.waitUntilOpen())
        let out = try await h.request("POST", "/v1/auth/logout", token: alice, json: [String: Any]())
        #expect(out.status == 200)
        #expect(out.object["loggedOut"] as? Bool == true)
        #expect(await stream.waitForClose())
        let after = try await h.request("GET", "/v1/notifications", token: alice)
        #expect(after.status == 401)
        #expect(after.header("content-type") == "application/problem+json")
    }

    @Test func streamRequiresAToken() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let stream = try SSEClient(port: h.port, token: "nope")
        #expect(await stream.waitForClose())
        #expect(stream.status == 401)
    }

    @Test func heartbeatCommentsAreSent() async throws {
        let h = try await GatewayHarness.start(["GATEWAY_SSE_HEARTBEAT_SECONDS": "1"])
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        let stream = try SSEClient(port: h.port, token: alice)
        let deadline = Timestamp.nowMs() + 60_000
        while stream.comments < 3 && Timestamp.nowMs() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(stream.comments >= 3)
        stream.close()
    }

    @Test func manyStreamsAreServedWithoutAThreadEach() async throws {
        // One account's 200 streams: over the default per-account cap (16), raised here.
        let h = try await GatewayHarness.start(["GATEWAY_MAX_STREAMS_PER_USER": "200"])
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        h.fakes.addUser("bob")
        let streams = try (0..<200).map { _ in try SSEClient(port: h.port, token: alice) }
        for s in streams { #expect(await s.waitUntilOpen()) }
        try await h.fakes.notify("alice", from: "bob")
        for s in streams { #expect(await s.waitFor(count: 1)) }
        let metrics = try await h.request("GET", "/metrics").text
        #expect(metrics.contains("sse_open_streams 200"))
        for s in streams { s.close() }
    }

    @Test func notificationListIsEnrichedInOneBatch() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        h.fakes.addUser("bob")
        h.fakes.addUser("carol")
        try await h.fakes.notify("alice", from: "bob")
        try await h.fakes.notify("alice", from: "carol", type: .follow)
        try await h.fakes.notify("alice", from: "ghost")  // unknown actor: left out
        let before = h.fakes.calls(Profile.UsersByIds.type)
        let r = try await h.request("GET", "/v1/notifications?limit=10", token: alice)
        #expect(r.status == 200)
        let items = r.object["items"] as? [[String: Any]] ?? []
        #expect(
            items.map { $0["text"] as? String } == [
                "carol started following you.", "bob liked your photo.",
            ])
        #expect(r.object["unreadCount"] as? Int == 3)
        #expect(r.object["nextCursor"] is NSNull)
        #expect(h.fakes.calls(Profile.UsersByIds.type) - before == 1)
    }

    @Test func profileHeaderMergesBothServices() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        h.fakes.addUser("bob")
        let r = try await h.request("GET", "/v1/users/bob", token: alice)
        #expect(r.status == 200)
        #expect((r.object["user"] as? [String: Any])?["username"] as? String == "bob")
        #expect((r.object["user"] as? [String: Any])?["profilePhotoURL"] is NSNull)
        let counts = r.object["counts"] as? [String: Any] ?? [:]
        #expect(
            counts["followers"] as? Int == 5 && counts["following"] as? Int == 7
                && counts["posts"] as? Int == 3)
        #expect(r.object["followState"] as? String == "following")
        #expect(try await h.request("GET", "/v1/users/nobody", token: alice).status == 404)
    }

    @Test func tokensAreCached() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        for _ in 0..<5 {
            #expect(try await h.request("GET", "/v1/notifications", token: alice).status == 200)
        }
        #expect(h.fakes.calls(Auth.Validate.type) == 1)
    }

    @Test func registerValidatesThenCreatesTheProfile() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let body: [String: Any] = [
            "email": "dana@example.com", "username": "dana", "password": "correct-horse-9",
            "name": "Dana", "gender": "female",
        ]
        let r = try await h.request("POST", "/v1/auth/register", json: body)
        #expect(r.status == 201)
        #expect(r.object["token"] as? String == "tok-new")
        let user = r.object["user"] as? [String: Any] ?? [:]
        #expect(
            user["username"] as? String == "dana" && user["gender"] as? String == "female"
                && user["phone"] is NSNull)
        var bad = body
        bad["gender"] = "robot"
        let g = try await h.request("POST", "/v1/auth/register", json: bad)
        #expect(g.status == 400)
        #expect((g.object["errors"] as? [[String: Any]])?.first?["field"] as? String == "gender")
        bad = body
        bad["password"] = "short"
        let weak = try await h.request("POST", "/v1/auth/register", json: bad)
        #expect(weak.status == 400 && weak.object["code"] as? String == "weak_password")
        bad = body
        bad["birthDate"] = "2001-02-30"
        #expect(try await h.request("POST", "/v1/auth/register", json: bad).status == 400)
    }
}
