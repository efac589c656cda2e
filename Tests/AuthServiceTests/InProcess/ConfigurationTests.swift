import Support
import Testing

@testable import AuthService

/// `AUTH_*` variables: defaults, values read, and a bad value refused naming its variable.
struct ConfigurationTests {
    @Test func defaults() throws {
        let configuration = try AuthConfiguration(env: Environment([:]))
        #expect(configuration.sessionTTLSeconds == 30 * 24 * 3600)
        #expect(configuration.sessionPurgeSeconds == 3600)
        #expect(configuration.hashConcurrency == 2)
        #expect(configuration.hashQueueLimit == 256)
        #expect(!configuration.allowImports)
    }

    @Test func valuesAreRead() throws {
        let configuration = try AuthConfiguration(
            env: Environment([
                "AUTH_SESSION_TTL_SECONDS": "60", "AUTH_SESSION_PURGE_SECONDS": "5", "AUTH_LOGIN_MAX_FAILURES": "3",
                "AUTH_LOGIN_WINDOW_SECONDS": "120", "AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS": "7",
                "AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT_HOUR": "9", "AUTH_HASH_CONCURRENCY": "1", "AUTH_HASH_QUEUE_LIMIT": "0",
                "ALLOW_IMPORTS": "1",
            ]))
        #expect(configuration.sessionTTLSeconds == 60)
        #expect(configuration.sessionPurgeSeconds == 5)
        let policy = configuration.throttlePolicy
        #expect(policy.maxFailuresPerAccountAndAddress == 3)
        #expect(policy.windowSeconds == 120)
        #expect(policy.maxFailuresPerAddress == 7)
        #expect(policy.maxFailuresPerAccountPerHour == 9)
        #expect(configuration.hashConcurrency == 1)
        #expect(configuration.hashQueueLimit == 0)
        #expect(configuration.allowImports)
    }

    @Test func aBadValueIsRefusedNamingItsVariable() {
        for (variable, value) in [
            ("AUTH_SESSION_TTL_SECONDS", "0"), ("AUTH_SESSION_PURGE_SECONDS", "soon"), ("AUTH_LOGIN_MAX_FAILURES", "0"),
            ("AUTH_LOGIN_MAX_FAILURES_PER_ADDRESS", "-1"), ("AUTH_LOGIN_MAX_FAILURES_PER_ACCOUNT_HOUR", "1e3"),
            ("AUTH_HASH_CONCURRENCY", "65"), ("ALLOW_IMPORTS", "maybe"),
        ] {
            do {
                _ = try AuthConfiguration(env: Environment([variable: value]))
                Issue.record("\(variable)=\(value) accepted")
            } catch let error as ConfigurationError {
                #expect(error.variable == variable)
            } catch {
                Issue.record("\(error)")
            }
        }
    }
}
