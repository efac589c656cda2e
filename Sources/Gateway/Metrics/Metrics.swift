import Foundation
import ServiceKit
import Support

/// The gateway's Prometheus metrics (text exposition format 0.0.4):
/// `http_requests_total{route,method,status}`, `http_request_duration_seconds{route}` (histogram),
/// `rpc_calls_total{service,type,outcome}`, `rpc_call_duration_seconds{service}` (histogram),
/// `sse_open_streams`, `http_open_connections`, `http_connection_checks_total` (looks at connections'
/// deadlines: one per deadline that came up, not per connection per second), `events_delivered_total`, `events_dropped_total`,
/// `events_received_total{producer}`, `stream_repairs_total{outcome}` (live notifications read
/// from NotificationService because delivery missed them: `filled` notifications, `head_behind`
/// channels found behind by a heads check, `failed` reads), `stream_channels` (recipients
/// subscribed to), `http_response_buffer_bytes` (response bytes the gateway holds now) and
/// `http_response_buffer_peak_bytes` (the most it has held at once).
///
/// Clients cannot shape it: every label value comes from a closed set (route templates or
/// `unmatched`, the standard methods or `other`, status codes, the services' names and message
/// types, fixed outcomes), and every label value is escaped as the text format requires.
final class Metrics: Sendable {
    /// Histogram upper bounds in seconds.
    static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    /// The label of a method: the standard ones a route can serve (RFC 9110 §9) by name,
    /// anything else (`CONNECT`, `PROPFIND`, ...) `other`.
    static func label(_ method: HTTPMethod) -> String {
        switch method {
        case .get, .head, .post, .put, .patch, .delete, .options: method.token
        case .connect, .other: "other"
        }
    }

    struct Histogram {
        var counts = [Int](repeating: 0, count: Metrics.buckets.count)
        var sum = 0.0
        var count = 0
        mutating func observe(_ seconds: Double) {
            for (i, bound) in Metrics.buckets.enumerated() where seconds <= bound { counts[i] += 1 }
            sum += seconds
            count += 1
        }
    }

    private struct State {
        var requests: [[String]: Int] = [:]
        var requestDurations: [String: Histogram] = [:]
        var rpcCalls: [[String]: Int] = [:]
        var rpcDurations: [String: Histogram] = [:]
        var eventsReceived: [String: Int] = [:]
        var delivered = 0
        var dropped = 0
        var repairs: [String: Int] = [:]
    }
    private let state = Locked(State())
    /// The gauges' values at render time.
    struct Gauges: Sendable {
        var streams = 0
        var connections = 0
        var channels = 0
        /// Response bytes held now, and the most held at once.
        var responseBufferBytes = 0
        var responseBufferPeakBytes = 0
        /// Looks at connections' deadlines since the start (`HTTPServer.connectionChecks`).
        var connectionChecks = 0
    }
    /// Reads the gauges at render time.
    let gauges: @Sendable () -> Gauges

    init(gauges: @escaping @Sendable () -> Gauges) { self.gauges = gauges }

    /// Counts a request. `route` is a template or `unmatched`; an unknown method counts as `other`.
    func recordRequest(route: String, method: HTTPMethod, status: Int, seconds: Double) {
        let method = Self.label(method)
        state.withLock { s in
            s.requests[[route, method, "\(status)"], default: 0] += 1
            s.requestDurations[route, default: Histogram()].observe(seconds)
        }
    }

    /// Counts an answer the HTTP server wrote by itself (route `unmatched`, method `other`, no
    /// duration).
    func recordServerAnswer(status: Int) {
        recordRequest(route: "unmatched", method: .other(""), status: status, seconds: 0)
    }

    func recordCall(service: String, type: String, outcome: String, seconds: Double) {
        state.withLock { s in
            s.rpcCalls[[service, type, outcome], default: 0] += 1
            s.rpcDurations[service, default: Histogram()].observe(seconds)
        }
    }

    func eventReceived(producer: String, _ n: Int = 1) { state.withLock { $0.eventsReceived[producer, default: 0] += n } }
    func eventDelivered(_ n: Int = 1) { state.withLock { $0.delivered += n } }
    func eventDropped(_ n: Int = 1) { state.withLock { $0.dropped += n } }
    /// `outcome`: `filled`, `head_behind` or `failed`.
    func streamRepair(_ outcome: String, _ n: Int = 1) { state.withLock { $0.repairs[outcome, default: 0] += n } }

    /// The exposition text.
    func render() -> String {
        let s = state.withLock { $0 }
        let g = gauges()
        let (streams, connections, channels) = (g.streams, g.connections, g.channels)
        var out = ""
        out += "# HELP http_requests_total HTTP requests by route template, method and status.\n"
        out += "# TYPE http_requests_total counter\n"
        for (k, v) in s.requests.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            out += "http_requests_total{route=\"\(Self.escape(k[0]))\",method=\"\(Self.escape(k[1]))\",status=\"\(k[2])\"} \(v)\n"
        }
        out += "# HELP http_request_duration_seconds HTTP request latency by route template.\n"
        out += "# TYPE http_request_duration_seconds histogram\n"
        for (route, h) in s.requestDurations.sorted(by: { $0.key < $1.key }) {
            out += Self.histogram("http_request_duration_seconds", label: "route=\"\(Self.escape(route))\"", h)
        }
        out += "# HELP rpc_calls_total Service calls by service, message type and outcome.\n"
        out += "# TYPE rpc_calls_total counter\n"
        for (k, v) in s.rpcCalls.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            out += "rpc_calls_total{service=\"\(Self.escape(k[0]))\",type=\"\(Self.escape(k[1]))\",outcome=\"\(k[2])\"} \(v)\n"
        }
        out += "# HELP rpc_call_duration_seconds Service call latency by service.\n"
        out += "# TYPE rpc_call_duration_seconds histogram\n"
        for (service, h) in s.rpcDurations.sorted(by: { $0.key < $1.key }) {
            out += Self.histogram("rpc_call_duration_seconds", label: "service=\"\(Self.escape(service))\"", h)
        }
        out += "# HELP sse_open_streams Open notification streams.\n# TYPE sse_open_streams gauge\n"
        out += "sse_open_streams \(streams)\n"
        out += "# HELP http_open_connections Open client connections.\n# TYPE http_open_connections gauge\n"
        out += "http_open_connections \(connections)\n"
        out += "# HELP http_connection_checks_total Looks at a connection's deadlines, one per deadline that came up.\n"
        out += "# TYPE http_connection_checks_total counter\nhttp_connection_checks_total \(g.connectionChecks)\n"
        out += "# HELP http_response_buffer_bytes Response bytes the gateway holds for clients now.\n"
        out += "# TYPE http_response_buffer_bytes gauge\nhttp_response_buffer_bytes \(g.responseBufferBytes)\n"
        out += "# HELP http_response_buffer_peak_bytes The most response bytes the gateway has held at once.\n"
        out += "# TYPE http_response_buffer_peak_bytes gauge\nhttp_response_buffer_peak_bytes \(g.responseBufferPeakBytes)\n"
        out += "# HELP events_received_total Events received from producers.\n# TYPE events_received_total counter\n"
        for (p, v) in s.eventsReceived.sorted(by: { $0.key < $1.key }) {
            out += "events_received_total{producer=\"\(Self.escape(p))\"} \(v)\n"
        }
        out += "# HELP events_delivered_total Notification events written to streams.\n"
        out += "# TYPE events_delivered_total counter\nevents_delivered_total \(s.delivered)\n"
        out += "# HELP events_dropped_total Notification events not written because a stream's buffer overflowed.\n"
        out += "# TYPE events_dropped_total counter\nevents_dropped_total \(s.dropped)\n"
        out += "# HELP stream_repairs_total Live notifications read again because delivery missed them.\n"
        out += "# TYPE stream_repairs_total counter\n"
        for (k, v) in s.repairs.sorted(by: { $0.key < $1.key }) {
            out += "stream_repairs_total{outcome=\"\(Self.escape(k))\"} \(v)\n"
        }
        out += "# HELP stream_channels Recipients whose notifications this gateway subscribes to.\n"
        out += "# TYPE stream_channels gauge\nstream_channels \(channels)\n"
        return out
    }

    static func histogram(_ name: String, label: String, _ h: Histogram) -> String {
        var out = ""
        for (i, bound) in buckets.enumerated() { out += "\(name)_bucket{\(label),le=\"\(bound)\"} \(h.counts[i])\n" }
        out += "\(name)_bucket{\(label),le=\"+Inf\"} \(h.count)\n"
        out += "\(name)_sum{\(label)} \(h.sum)\n"
        out += "\(name)_count{\(label)} \(h.count)\n"
        return out
    }

    /// A label value escaped per the text format: `\` → `\\`, `"` → `\"`, line feed → `\n`.
    static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
