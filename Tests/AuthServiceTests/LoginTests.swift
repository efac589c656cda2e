import Shared
import Synchronization
import TestSupport
import Testing

/// Login by email or username, failures that do not reveal whether an account exists, and
/// bounded password hashing.
@Suite struct LoginTests {
    @Test func loginByUsernameOrEmailCaseInsensitively() async throws {
        let auth = try await AuthFixture.start()
        let registered = try await auth.register("alice", email: "alice@example.com")
        for login in ["alice", "ALICE", "alice@example.com", "Alice@EXAMPLE.com", "  alice  "] {
            let reply = try await auth.login(login)
            #expect(reply.identity == registered.identity)
            #expect(reply.session.token != registered.session.token)
            #expect(try await auth.validate(reply.session.token).userId == registered.identity.id)
        }
    }

    @Test func unknownUserAndWrongPasswordGetTheSameAnswer() async throws {
        let auth = try await AuthFixture.start()
        try await auth.register("alice")
        let wrong = await expectError("invalid_credentials", status: 401) {
            _ = try await auth.login("alice", "wrong password")
        }
        let unknown = await expectError("invalid_credentials", status: 401) {
            _ = try await auth.login("nobody", "wrong password")
        }
        #expect(wrong == unknown)
    }

    @Test func otherRequestsAreAnsweredWhileALoginFloodIsQueued() async throws {
        let auth = try await AuthFixture.start()
        let alice = try await auth.register("alice")
        let finished = Counter()
        let flood = 30
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<flood {
                group.addTask {
                    _ = try await auth.login("alice")
                    finished.increment()
                }
            }
            // Hashing is bounded (2 at a time, off the cooperative pool): validation still gets through.
            let session = try await auth.validate(alice.session.token)
            #expect(session.userId == alice.identity.id)
            #expect(finished.value < flood)
            try await group.waitForAll()
        }
        #expect(finished.value == flood)
    }

    @Test func aFullHashingQueueAnswersBusy() async throws {
        let auth = try await AuthFixture.start([
            "AUTH_HASH_CONCURRENCY": "1", "AUTH_HASH_QUEUE_LIMIT": "0",
        ])
        let codes = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<8 {
                group.addTask {
                    do {
                        _ = try await auth.login("ghost\(i)", "wrong password")
                        return "ok"
                    } catch let e as ServiceError { return e.code }
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(codes.contains("busy"))
        #expect(codes.contains("invalid_credentials"))
        #expect(Set(codes).isSubset(of: ["busy", "invalid_credentials"]))
    }

    /// Logins whose turn would come after their deadline are refused at once (503 `busy` with
    /// Retry-After), not left to time out in the queue.
    @Test func loginsThatCannotBeServedInTimeAreRefusedWithRetryAfter() async throws {
        let auth = try await AuthFixture.start(["AUTH_HASH_CONCURRENCY": "1"])
        let outcomes = try await withThrowingTaskGroup(of: (String, Int?).self) { group in
            for i in 0..<60 {
                group.addTask {
                    do {
                        _ = try await auth.client.call(
                            Auth.Login.self, .init(login: "ghost\(i)", password: "wrong password"), timeoutMs: 1_500)
                        return ("ok", nil)
                    } catch let e as ServiceError { return (e.code, e.retryAfter) }
                }
            }
            return try await group.reduce(into: [(String, Int?)]()) { $0.append($1) }
        }
        let busy = outcomes.filter { $0.0 == "busy" }
        #expect(!busy.isEmpty)
        #expect(busy.allSatisfy { ($0.1 ?? 0) >= 1 })
        #expect(outcomes.contains { $0.0 == "invalid_credentials" })
        // A few may still miss a deadline when a hash runs slower than the running average.
        #expect(outcomes.filter { $0.0 == "deadline_exceeded" || $0.0 == "service_timeout" }.count <= 3)
    }
}

/// A thread-safe counter for tests.
final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
