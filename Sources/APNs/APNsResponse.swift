import Foundation

/// One answer from APNs to one request, as read off the HTTP/2 stream.
///
/// Source: Apple, "Handling notification responses from APNs" (developer.apple.com): the status,
/// the `apns-id` header, and on errors a JSON body `{"reason": …, "timestamp": …}` (the timestamp,
/// milliseconds since 1970, only with 410).
struct APNsResponse: Sendable, Equatable {
    /// The HTTP status.
    var status: Int
    /// The `apns-id` response header.
    var apnsID: String?
    /// The `retry-after` response header, in seconds (delta-seconds or an HTTP-date, RFC 9110
    /// §10.2.3).
    var retryAfter: Double?
    /// The body's `reason`.
    var reason: String?
    /// The body's `timestamp`: milliseconds since 1970.
    var timestamp: Int64?

    /// What the client does with it.
    enum Decision: Sendable, Equatable {
        /// The message's outcome is final.
        case outcome(PushOutcome)
        /// 403 `ExpiredProviderToken` / `InvalidProviderToken`: replace the provider token and
        /// send the message again (once).
        case renewTokenAndResend(reason: String)
    }

    /// Reads a response from its status, header lines and body.
    /// - Parameters:
    ///   - headers: the header fields, names in lowercase.
    ///   - now: seconds since 1970, to turn an HTTP-date `retry-after` into seconds.
    init(status: Int, headers: [String: String], body: [UInt8], now: Double = Date().timeIntervalSince1970) {
        self.status = status
        apnsID = headers["apns-id"]
        retryAfter = headers["retry-after"].flatMap { Self.seconds(retryAfter: $0, now: now) }
        struct Body: Decodable {
            var reason: String?
            var timestamp: Int64?
        }
        let decoded = body.isEmpty ? nil : try? JSONDecoder().decode(Body.self, from: Data(body))
        reason = decoded?.reason
        timestamp = decoded?.timestamp
    }

    init(status: Int, apnsID: String? = nil, retryAfter: Double? = nil, reason: String? = nil, timestamp: Int64? = nil) {
        self.status = status
        self.apnsID = apnsID
        self.retryAfter = retryAfter
        self.reason = reason
        self.timestamp = timestamp
    }

    /// Classifies the response as the ``PushOutcome`` documentation says: 200 sent; 400
    /// `BadDeviceToken` / `DeviceTokenNotForTopic` and 410 remove the device (410 with its
    /// timestamp); 403 `ExpiredProviderToken` / `InvalidProviderToken` renew the token and resend
    /// (once: `tokenRenewed` says it was done for this message, and then the 403 is dropped, as
    /// the key, key id or team id is wrong); 429 and 5xx retry after `retry-after`; 400
    /// `IdleTimeout` retries at once; every other status is dropped (413 `PayloadTooLarge`, the
    /// other 400s, 403s, 404 `BadPath`, 405 `MethodNotAllowed`).
    func decision(tokenRenewed: Bool) -> Decision {
        let reason = reason ?? "HTTP \(status)"
        switch status {
        case 200:
            return .outcome(.sent(apnsID: apnsID))
        case 400 where reason == "BadDeviceToken" || reason == "DeviceTokenNotForTopic":
            return .outcome(.removeDevice(reason: reason, unregisteredAt: nil))
        case 400 where reason == "IdleTimeout":
            return .outcome(.retry(reason: reason, after: retryAfter))
        case 410:
            return .outcome(.removeDevice(reason: reason, unregisteredAt: timestamp))
        case 403 where !tokenRenewed && (reason == "ExpiredProviderToken" || reason == "InvalidProviderToken"):
            return .renewTokenAndResend(reason: reason)
        case 429, 500...599:
            return .outcome(.retry(reason: reason, after: retryAfter))
        default:
            return .outcome(.dropped(reason: reason))
        }
    }

    /// A `retry-after` value in seconds from now: delta-seconds, or an IMF-fixdate (RFC 9110
    /// §5.6.7) turned into the seconds until it (0 when past). Nil when it is neither.
    static func seconds(retryAfter text: String, now: Double) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed), seconds >= 0, seconds.isFinite { return seconds }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return max(0, date.timeIntervalSince1970 - now)
    }
}
