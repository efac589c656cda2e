import Testing

@testable import Gateway

/// The upload budget alone, without a server (UploadBudgetTests checks it through one): the total,
/// one peer's share, shared peers, and giving bytes back.
@Suite struct UploadBudgetUnitTests {
    /// A budget to call from `#expect` (which cannot take a mutating call on a local value).
    final class Ledger {
        var budget: UploadBudget
        init(_ budget: UploadBudget) { self.budget = budget }
        func reserve(_ bytes: Int, _ peer: String) -> Bool { budget.reserve(bytes, peer: peer) }
        func release(_ bytes: Int, _ peer: String) { budget.release(bytes, peer: peer) }
    }

    @Test func reservationsStopAtTheTotal() {
        let l = Ledger(UploadBudget(limit: 100, perPeerLimit: 100))
        #expect(l.reserve(80, "a"))
        #expect(!l.reserve(50, "b"))
        #expect(l.budget.total == 80 && l.budget.byPeer == ["a": 80])
        #expect(l.reserve(20, "b"))
        #expect(!l.reserve(1, "c"))
        l.release(80, "a")
        #expect(l.budget.total == 20 && l.budget.byPeer == ["b": 20])
        #expect(l.reserve(50, "c"))
    }

    @Test func onePeerHoldsOnlyItsShareButASharedPeerOnlyTheTotal() {
        let l = Ledger(UploadBudget(limit: 100, perPeerLimit: 40, sharedPeers: ["10.0.0.1"]))
        #expect(l.reserve(40, "a"))
        #expect(!l.reserve(1, "a"))
        #expect(l.reserve(40, "b"))
        #expect(l.reserve(20, "10.0.0.1"))
        #expect(!l.reserve(1, "10.0.0.1"))  // the total still holds
        l.release(40, "a")
        #expect(l.reserve(40, "10.0.0.1"))
        #expect(l.budget.byPeer["10.0.0.1"] == 60)
    }

    @Test func givingBackNothingChangesNothingAndAPeerWithNoneLeftIsForgotten() {
        let l = Ledger(UploadBudget(limit: 100, perPeerLimit: 100))
        l.release(0, "a")
        #expect(l.budget.total == 0 && l.budget.byPeer.isEmpty)
        #expect(l.reserve(30, "a"))
        l.release(10, "a")
        #expect(l.budget.byPeer == ["a": 20])
        l.release(20, "a")
        #expect(l.budget.total == 0 && l.budget.byPeer.isEmpty)
    }

    @Test func theServersConfigurationGivesTheBudget() {
        var configuration = HTTPServer.Configuration()
        configuration.maxLargeBodyBytesInFlight = 300
        configuration.maxLargeBodyBytesPerPeer = 200
        configuration.sharedPeers = ["127.0.0.1"]
        let budget = UploadBudget(configuration)
        #expect(budget.limit == 300 && budget.perPeerLimit == 200 && budget.sharedPeers == ["127.0.0.1"])
    }
}
