/// The HTTP/2 request for one ``PushMessage``: `POST {baseURL}/3/device/{token}` with the
/// `apns-*` headers and the payload as body.
///
/// Source: Apple, "Sending notification requests to APNs" (developer.apple.com), "Header fields
/// for a POST request".
struct APNsRequest: Sendable {
    /// The absolute URL.
    var url: String
    /// Header lines, `name: value`, without the `authorization` one (added per attempt).
    var headers: [String]
    /// The JSON payload.
    var body: [UInt8]

    /// The largest payload of an alert push, bytes (Apple: 4 KB, answered 413 beyond).
    static let maximumPayload = 4096
    /// The longest `apns-collapse-id`, bytes (Apple: 64, answered 400 `BadCollapseId` beyond).
    static let maximumCollapseID = 64
    /// The longest device token accepted, hex digits (Apple's are 64 today and may grow).
    static let maximumTokenLength = 200

    /// Builds the request, or says locally what APNs would answer to a malformed message, so
    /// that nothing unsendable (or able to inject a header line) leaves: a token that is not hex
    /// → remove the device (`BadDeviceToken`); a collapse id over 64 bytes or with control
    /// characters, a priority other than 5 or 10, an empty or over-4 KB payload → dropped
    /// (`BadCollapseId`, `BadPriority`, `PayloadEmpty`, `PayloadTooLarge`).
    static func make(_ message: PushMessage, baseURL: String, topic: String) -> Result<APNsRequest, Rejection> {
        let token = message.deviceToken
        guard !token.isEmpty, token.utf8.count <= maximumTokenLength, token.utf8.allSatisfy(\.isHexDigit) else {
            return .failure(Rejection(outcome: .removeDevice(reason: "BadDeviceToken", unregisteredAt: nil)))
        }
        if let id = message.collapseID,
            id.utf8.count > maximumCollapseID || id.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f })
        {
            return .failure(Rejection(outcome: .dropped(reason: "BadCollapseId")))
        }
        guard message.priority == 5 || message.priority == 10 else {
            return .failure(Rejection(outcome: .dropped(reason: "BadPriority")))
        }
        guard !message.payload.isEmpty else { return .failure(Rejection(outcome: .dropped(reason: "PayloadEmpty"))) }
        guard message.payload.count <= maximumPayload else {
            return .failure(Rejection(outcome: .dropped(reason: "PayloadTooLarge")))
        }
        var headers = [
            "apns-topic: \(topic)",
            "apns-push-type: alert",
            "apns-priority: \(message.priority)",
            "apns-expiration: \(message.expiration)",
            "content-type: application/json",
        ]
        if let id = message.collapseID { headers.append("apns-collapse-id: \(id)") }
        return .success(APNsRequest(url: "\(baseURL)/3/device/\(token)", headers: headers, body: message.payload))
    }

    /// A message that was not sent, and its outcome.
    struct Rejection: Error, Equatable {
        var outcome: PushOutcome
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (self >= 0x30 && self <= 0x39) || (self >= 0x61 && self <= 0x66) || (self >= 0x41 && self <= 0x46)
    }
}
