import Wire

/// A request/reply message pair with its wire type name.
///
/// Each service's messages are nested in one namespace (`Auth.Login`, `Notifications.Follow`), so the
/// gateway and the service compile against the same definition; the JSON is the contract.
public protocol RPC {
    associatedtype Request: Codable & Sendable
    associatedtype Reply: Codable & Sendable
    /// The envelope's `type`, e.g. `auth.login`.
    static var type: String { get }
    /// Whether the RPC client may retry it on "unavailable" (safe to run twice).
    static var isIdempotent: Bool { get }
}

/// An event body with its wire type (also its PUB/SUB topic).
public protocol Event: Codable, Sendable {
    static var type: String { get }
}

/// A page of a cursor-paged list. `nextCursor` is nil on the last page.
public struct Page<Item: Codable & Sendable>: Codable, Sendable {
    public var items: [Item]
    public var nextCursor: String?
    public init(items: [Item], nextCursor: String?) {
        self.items = items
        self.nextCursor = nextCursor
    }
}

/// Paging parameters: `limit` 1...100 (validated by the gateway), `cursor` opaque or nil.
public struct PageRequest: Codable, Sendable {
    public var limit: Int
    public var cursor: String?
    public init(limit: Int = 20, cursor: String? = nil) {
        self.limit = limit
        self.cursor = cursor
    }
}

/// Operations every service host answers.
public enum Ops {
    /// Liveness and counters. Reply: service name, uptime in ms, request counters by type.
    public enum Ping: RPC {
        public static let type = "ops.ping"
        public static let isIdempotent = true
        public typealias Request = Empty
        public struct Reply: Codable, Sendable {
            public var service: String
            public var uptimeMs: Int64
            public var counters: [String: Int64]
            public init(service: String, uptimeMs: Int64, counters: [String: Int64]) {
                self.service = service
                self.uptimeMs = uptimeMs
                self.counters = counters
            }
        }
    }

    /// Replay from the outbox: the events with `seq > after`, oldest first, at most `limit`
    /// (capped at 1,000; 0 asks only for `head`) and about `maxBytes` of event bodies (at least
    /// one event), so a subscriber asks again from the last one it got until it reaches `head`.
    /// Used by subscribers on a gap or on (re)join.
    public enum Replay: RPC {
        public static let type = "ops.replay"
        public static let isIdempotent = true
        /// The bodies one reply carries at most, in bytes (4 MiB), unless its first event alone
        /// is larger.
        public static let maxBytes = 4 << 20
        public struct Request: Codable, Sendable {
            public var after: Int64
            public var limit: Int
            public init(after: Int64, limit: Int) {
                self.after = after
                self.limit = limit
            }
        }
        public struct Reply: Codable, Sendable {
            /// The producer's newest sequence number.
            public var head: Int64
            /// Raw event envelopes (each a JSON document as a string), in sequence order.
            public var events: [String]
            public init(head: Int64, events: [String]) {
                self.head = head
                self.events = events
            }
        }
    }
}

extension PageRequest {
    /// `limit` clamped to 1...100 (the gateway answers 400 outside that; this only guards the service).
    public var clampedLimit: Int { min(max(limit, 1), 100) }
}
