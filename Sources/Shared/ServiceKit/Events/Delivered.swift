import Messages
import Wire

/// One event as a typed handler receives it.
public struct Delivered<E: Event>: Sendable {
    /// The decoded body.
    public let body: E
    /// Producer, sequence number, type and commit time (`header.time`, RFC 3339).
    public let header: EventHeader
    /// Lookups already run for this event (see `EventOutcome.needsLookup`): a handler that
    /// still misses its data after one gives up rather than asking forever.
    public let lookups: Int

    /// An event as a subscriber hands it to a handler.
    public init(body: E, header: EventHeader, lookups: Int) {
        self.body = body
        self.header = header
        self.lookups = lookups
    }
}
