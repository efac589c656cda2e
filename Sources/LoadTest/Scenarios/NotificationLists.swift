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

    /// Counts `keys` in the newest `limit` items of the user's list: one request, sent at `at`
    /// (monotonic ns, open loop) through the engine's schedule.
    /// - Returns: occurrences by key (absent keys are 0), or nil when the request failed.
    static func newest(_ api: GatewayAPI, token: String, keys: Set<NotificationKey>, limit: Int, at: UInt64) async
        -> [NotificationKey: Int]?
    {
        let r = await api.engine.send(
            api.request("GET", "/v1/notifications?limit=\(max(1, min(100, limit)))", token: token, at: at))
        guard r.status == 200 else { return nil }
        var counts: [NotificationKey: Int] = [:]
        for item in r.object["items"] as? [[String: Any]] ?? [] {
            if let k = NotificationKey(json: item), keys.contains(k) { counts[k, default: 0] += 1 }
        }
        return counts
    }
}
