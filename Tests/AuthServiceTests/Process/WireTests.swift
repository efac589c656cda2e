import TestSupport
import Testing
import Wire

/// What only the wire shows: the client address carried in `auth.login` decides the
/// throttling, and a burst of logins gets only documented answers.
@Suite(.serialized) struct WireTests {
    @Test func theClientAddressSentWithALoginDecidesWhoIsThrottled() async throws {
        let auth = try await AuthFixture.start()
        let alice = try await auth.register("alice")
        for _ in 0..<5 {
            await expectError("invalid_credentials", status: 401) {
                try await auth.login("alice", "wrong password", from: "198.51.100.66")
            }
        }
        let refused = await expectError("too_many_attempts", status: 429) {
            try await auth.login("alice", from: "198.51.100.66")
        }
        let retryAfter = try #require(refused?.retryAfter)
        #expect((1...900).contains(retryAfter))
        #expect(try await auth.login("alice", from: "192.0.2.10").identity == alice.identity)
        #expect(try await auth.login("alice").identity == alice.identity)  // no address: one shared "unknown" one
    }

    /// Under a burst of logins against one hashing slot and a queue of two, every request is
    /// answered, and only with a documented answer: checked (401), refused with `busy` and a
    /// Retry-After, or a missed deadline. How many of each depends on this machine's speed and
    /// is not asserted (`PasswordHasherTests` pins the admission rules with the slot held).
    /// Afterwards the service answers as before.
    @Test func aLoginBurstGetsOnlyDocumentedAnswers() async throws {
        let auth = try await AuthFixture.start(["AUTH_HASH_CONCURRENCY": "1", "AUTH_HASH_QUEUE_LIMIT": "2"])
        try await auth.register("alice")
        let outcomes = try await withThrowingTaskGroup(of: (String, Int?).self) { group in
            for i in 0..<30 {
                group.addTask {
                    do {
                        try await auth.login("ghost\(i)", "wrong password", from: "192.0.2.\(i)")
                        return ("ok", nil)
                    } catch let e as ServiceError {
                        return (e.code, e.retryAfter)
                    }
                }
            }
            return try await group.reduce(into: [(String, Int?)]()) { $0.append($1) }
        }
        #expect(outcomes.count == 30)
        let documented: Set = ["invalid_credentials", "busy", "deadline_exceeded", "service_timeout"]
        #expect(outcomes.allSatisfy { documented.contains($0.0) }, "\(outcomes)")
        #expect(outcomes.filter { $0.0 == "busy" }.allSatisfy { ($0.1 ?? 0) >= 1 })
        #expect(outcomes.contains { $0.0 == "invalid_credentials" })  // the first always gets the free slot
        #expect(try await auth.login("alice").identity.username == "alice")
    }
}
