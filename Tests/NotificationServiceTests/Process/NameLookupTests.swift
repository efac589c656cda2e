import Foundation
import Harness
import TestSupport
import Testing

/// The real executable reaching its producers by name, as in the containers, with its DNS server
/// under the test's control (`TestDNSServer`).
@Suite(
    .serialized,
    .enabled(
        if: TestDNSServer.isAvailable,
        "needs root: a DNS server on port 53 and a mount namespace for the service's resolv.conf"))
struct NameLookupTests {
    /// The post-restart stall of deploy/README.md: podman's DNS left a restarted container's
    /// queries unanswered for a while, and libzmq, which looked `auth` up with a blocking
    /// getaddrinfo on its one I/O thread, held every socket of the process for the 20 s glibc
    /// takes to give up on a name (5 s per query, 2 attempts, the name with and without its
    /// search domain), and again for the next lookup: replays from ProfileService and AuthService
    /// failed with 503 for 20 to 45 s.
    @Test func aRestartedServiceCatchesUpWithOnePeerWhileTheOthersNameGoesUnanswered() async throws {
        let dns = try TestDNSServer()
        defer { dns.stop() }
        let h = try await ProcessHarness(dns: dns)
        defer { h.shutdown() }
        let ids = try await h.auth.register(["owner", "a", "b"])
        let owner = ids[0]
        try await h.like(ids[1], owner, post: "p1")
        try await h.waitForEvents(of: h.auth.producer)
        try await h.waitForEvents(of: h.profile)
        let applied = (auth: h.auth.producer.database.currentHead(), profile: h.profile.database.currentHead())

        // A crash; while the service is down both producers write events; the restarted process
        // finds auth's name unanswered.
        h.killService()
        try await h.like(ids[2], owner, post: "p1")
        let late = try await h.auth.register("late")
        dns.hold("insta-auth")
        let answeredBefore = dns.answeredQueries("insta-auth")
        try await h.launchService()
        try await eventually("the restarted service asks for auth's address") { dns.heldQueries("insta-auth") > 0 }

        // While auth's name goes unanswered, the service answers and replays what ProfileService
        // wrote during the downtime (ops.replay to ProfileService). 15 s is less than the 20 s one
        // lookup held the whole process before; now it takes about a second (2 s for the whole
        // test), but once in a full suite run on a loaded machine it took more than 10 s.
        try await h.waitForEvents(of: h.profile, since: applied.profile, seconds: 15)
        #expect(dns.answeredQueries("insta-auth") == answeredBefore)
        #expect(try await h.notifications(owner).items.map(\.actorId) == [ids[2].id, ids[1].id])

        // DNS answers again: auth's events of the downtime follow (a new lookup starts every
        // second; the unanswered ones are not waited for).
        dns.release("insta-auth")
        try await h.waitForEvents(of: h.auth.producer, since: applied.auth, seconds: 10)
        #expect(dns.answeredQueries("insta-auth") > answeredBefore)
        #expect(try await h.follow(late, "owner").followState == .following)
    }
}
