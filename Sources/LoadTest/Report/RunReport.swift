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
    /// The lower bound that goes with `allPersistedWithinMs`: from the last post request to the
    /// latest check that still missed a post (ms); every list was complete no earlier than this.
    var allPersistedAfterMs: Double?
    /// List requests the checks made (each one page of `limit` = the scenario's posts, at most 100).
    var checkRequests: Int?
    /// The longest planned time between two checks of one follower (ms): `--check-interval`,
    /// or longer when `--check-rate` spreads a round of many followers further.
    var effectiveCheckIntervalMs: Double?
}

/// The gateway's resident memory before and after the scenario's streams opened.
struct StreamMemoryReport: Codable, Sendable {
    var streams = 0
    /// VmRSS of the gateway process (kB) just before the streams were opened and once all had answered.
    var rssBeforeKB = 0
    var rssAfterKB = 0
    /// (after − before) ÷ streams, in bytes (negative if the process shrank meanwhile).
    var bytesPerStream = 0
}

/// How the system's delivery latency compares with a baseline's: system ÷ baseline.
struct LatencyRatios: Codable, Sendable {
    var p50: Double?
    var p99: Double?
    var max: Double?

    /// nil ratios where either side has no samples or a zero figure.
    init(system: LatencySummary, baseline: LatencySummary) {
        func ratio(_ a: Double, _ b: Double) -> Double? {
            system.count > 0 && baseline.count > 0 && b > 0 ? a / b : nil
        }
        p50 = ratio(system.p50, baseline.p50)
        p99 = ratio(system.p99, baseline.p99)
        max = ratio(system.max, baseline.max)
    }
}

/// The system's delivery latency over each baseline's, and nchan's over raw libzmq's.
struct BaselineRatios: Codable, Sendable {
    /// delivery ÷ raw libzmq.
    var systemOverLibzmq: LatencyRatios?
    /// delivery ÷ nginx + nchan.
    var systemOverNchan: LatencyRatios?
    /// nginx + nchan ÷ raw libzmq.
    var nchanOverLibzmq: LatencyRatios?
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
    /// What served it when it is not raw libzmq (e.g. `nginx/1.22.1 + nchan (eventsource)`).
    var server: String?
    /// Publish requests that did not answer 2xx (nginx + nchan only).
    var publishErrors: Int?
    /// Received more than once by the same subscriber (nginx + nchan only).
    var duplicates: Int?
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
    /// push: the celebrity post's pushes, one per follower's device (`delivery` holds the likes':
    /// `streamed` counts pushes seen at the stand-in APNs; latency is from the action's scheduled
    /// send to the push's arrival there).
    var celebrityPush: DeliveryReport?
    /// The raw libzmq PUB/SUB baseline (`--baseline`).
    var baseline: BaselineReport?
    /// The same shape through nginx + nchan: SSE subscribers, HTTP POST publishing (`--baseline`).
    var nchanBaseline: BaselineReport?
    /// Delivery latency over the baselines' (`--baseline`).
    var baselineRatios: BaselineRatios?
    /// The gateway's memory per open stream (scenarios with streams, when the gateway runs here).
    var gatewayStreamMemory: StreamMemoryReport?
    /// Peak resident memory (VmHWM, kB) of each service process found, and of the load tester.
    var peakRSSKB: [String: Int] = [:]
    /// CPU milliseconds (user + system, /proc/<pid>/stat) each process of the stack used while
    /// the actions ran and were delivered, from after setup to the end of the grace period;
    /// `total` is the services' sum (LoadTest's own is apart, under `LoadTest`).
    var cpuMs: [String: Double] = [:]
    /// `cpuMs` divided by the actions sent (likes, posts or pushes): CPU milliseconds per action.
    var cpuPerActionMs: [String: Double] = [:]
    var streamsOpen = 0
    /// Streams that ended while the run went on (each was opened again, resuming after its last id).
    var streamsClosedEarly = 0
    /// Streams opened again with `Last-Event-ID` after one ended.
    var streamReconnects = 0
    /// Reconnection attempts that failed (nothing reachable, 503, 429…) and were tried again.
    var streamReconnectFailures = 0
    /// likes: posts whose `likeCount` differed from the length of their likes list after the
    /// run, and the posts compared (nil: not compared).
    var countMismatches: Int?
    var countsCompared: Int?
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
    var nchan: [Sample] = []
}
