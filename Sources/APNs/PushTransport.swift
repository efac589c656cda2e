/// One push to one device, as the sender hands it to a transport.
///
/// The fields map onto Apple's provider API request (`POST /3/device/{token}`, "Sending
/// notification requests to APNs", developer.apple.com): `deviceToken` is the path, the others are
/// the `apns-*` headers and the body.
public struct PushMessage: Sendable, Equatable {
    /// The device token as registered: lowercase hex (APNs tokens are 32 bytes today; Apple says
    /// their length may change, so any even length up to 200 hex digits is accepted).
    public var deviceToken: String
    /// `apns-collapse-id`: at most 64 bytes; a newer push with the same id replaces an older one
    /// on the device. `nil` sends none.
    public var collapseID: String?
    /// `apns-priority`: 10 (immediate) or 5 (power-considerate).
    public var priority: Int
    /// `apns-expiration`: UNIX seconds after which APNs stops trying; 0 = try once.
    public var expiration: Int64
    /// The JSON payload, at most 4,096 bytes (Apple's limit for alert pushes).
    public var payload: [UInt8]

    /// Creates a message; see each property for its units and limits.
    public init(deviceToken: String, collapseID: String?, priority: Int, expiration: Int64, payload: [UInt8]) {
        self.deviceToken = deviceToken
        self.collapseID = collapseID
        self.priority = priority
        self.expiration = expiration
        self.payload = payload
    }
}

/// What became of one ``PushMessage``, classified as Apple documents the provider API's
/// responses ("Handling notification responses from APNs").
public enum PushOutcome: Sendable, Equatable {
    /// 200: APNs accepted it; `apnsID` is the `apns-id` response header.
    case sent(apnsID: String?)
    /// 400 `BadDeviceToken` / `DeviceTokenNotForTopic`, or 410 `Unregistered`: the token is dead.
    /// `unregisteredAt` is 410's `timestamp` (milliseconds since 1970): a token registered again
    /// after it must be kept.
    case removeDevice(reason: String, unregisteredAt: Int64?)
    /// 429, 5xx, a dead connection or a timeout: send again, not before `after` seconds when APNs
    /// gave `Retry-After`.
    case retry(reason: String, after: Double?)
    /// 413 `PayloadTooLarge` or another 4xx that sending again cannot fix: drop it and log it.
    case dropped(reason: String)
}

/// Something that sends pushes: the APNs HTTP/2 client, or a test double.
///
/// Implementations keep their connections open between calls and may send the messages of one
/// call concurrently (HTTP/2 streams); the reply has one outcome per message, in order.
public protocol PushTransport: Sendable {
    /// Sends `messages` and returns one ``PushOutcome`` per message, in the same order. Never
    /// throws: a failure is an outcome (`.retry` for what may succeed later).
    func send(_ messages: [PushMessage]) async -> [PushOutcome]
}
