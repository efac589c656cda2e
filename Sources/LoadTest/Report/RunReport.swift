import Foundation

/// Delivery of expected notifications: over streams (with latency) or found in lists afterwards.
struct DeliveryReport: Codable, Sendable {
    /// Notifications that must result from the actions that succeeded.
    var expected = 0
    /// Expected ones received over a stream.
    var streamed = 0
    /// Expected ones (for recipients without a stream) found in their notification list.
    var listed = 0
    /// Expected but never seen within the grace period.
    var lost = 0
    /// Received more than once (same recipient, type, post and actor).
    var duplicates = 0
    /// Received but not expected (e.g. from an action whose HTTP request failed).
    var unexpected = 0
    /// From the action's scheduled send to the event's arrival.
    var latencyMs = LatencySummary([])
    var timeline: [TimelinePoint] = []
}

/// After a celebrity post: how soon every follower's list held the notification.
struct PersistenceReport: Codable, Sendable {
    var followersChecked = 0
    var found = 0
    var missing = 0
    /// From the post request to the check that found it (an upper bound: checks are sequential).
    var latencyMs = LatencySummary([])
    /// Time from the last post request until every checked list held its notification (ms), nil if never.
    var allPersistedWithinMs: Double?
}

/// The raw libzmq PUB→SUB baseline.
struct BaselineReport: Codable, Sendable {
    var subscribers = 0
    var messages = 0
    var expected = 0
    var received = 0
    var lost = 0
    var payloadBytes = 0
    var ratePerSecond = 0.0
    var latencyMs = LatencySummary([])
    var timeline: [TimelinePoint] = []
}

/// Everything a run measured; written as report.json.
struct RunReport: Codable, Sendable {
    var scenario: String
    var seed: UInt64
    var url: String
    var startedAt: String
    var parameters: [String: String] = [:]
    var durationS = 0.0
    /// Actions attempted (likes or posts) and those answered 2xx.
    var actionsSent = 0
    var actionsOK = 0
    var throughputPerSecond = 0.0
    var errorsByStatus: [String: Int] = [:]
    /// HTTP latency of the actions, from scheduled send to response.
    var httpLatencyMs = LatencySummary([])
    var delivery = DeliveryReport()
    var persistence: PersistenceReport?
    var baseline: BaselineReport?
    /// Peak resident memory (VmHWM, kB) of each service process found, and of the load tester.
    var peakRSSKB: [String: Int] = [:]
    var streamsOpen = 0
    var streamsClosedEarly = 0
    var checks: [String] = []
    var failures: [String] = []

    static func timestamp() -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: Date())
    }
}

/// The samples behind the plots (not stored in the JSON beyond the timelines).
struct PlotData: Sendable {
    var delivery: [Sample] = []
    var baseline: [Sample] = []
}
