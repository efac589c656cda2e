import Foundation

/// Reads notification lists (`GET /v1/notifications`) to check persistence.
enum NotificationLists {
    /// Counts how often each of `keys` occurs in the user's list, reading up to `maxPages`
    /// pages of 100 (newest first), stopping early once every key was seen and `scanAll` is false.
    /// - Returns: occurrences by key (absent keys are 0), or nil when a request failed.
    static func count(
        _ api: GatewayAPI, token: String, keys: Set<NotificationKey>, maxPages: Int = 50,
        scanAll: Bool = false
    )
        async -> [NotificationKey: Int]?
    {
        var counts: [NotificationKey: Int] = [:]
        var cursor: String?
        for _ in 0..<maxPages {
            var path = "/v1/notifications?limit=100"
            if let c = cursor {
                path += "&cursor=\(c.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? c)"
            }
            let r = await api.call("GET", path, token: token)
            guard r.status == 200 else { return nil }
            let o = r.object
            for item in o["items"] as? [[String: Any]] ?? [] {
                if let k = NotificationKey(json: item), keys.contains(k) { counts[k, default: 0] += 1 }
            }
            if !scanAll && keys.allSatisfy({ counts[$0] != nil }) { break }
            guard let next = o["nextCursor"] as? String else { break }
            cursor = next
        }
        return counts
    }
}
