import Foundation

/// The gateway's memory per open notification stream: its resident memory (VmRSS) just before a
/// scenario opens its streams and once all of them have answered, the difference divided by the
/// stream count. Only when the gateway is a process on this machine (found as in `ServiceMemory`).
enum StreamMemory {
    /// Runs `open` (which opens `streams` streams) between the two readings.
    /// - Parameters:
    ///   - pids: the smoke run's own processes by executable name; nil to find the gateway by its port.
    /// - Returns: what `open` returned, and the report (nil when the gateway's RSS cannot be read).
    /// - Throws: what `open` throws.
    static func measure<T>(
        api: GatewayAPI, pids: [String: Int32]?, streams: Int, _ open: () async throws -> T
    ) async rethrows -> (T, StreamMemoryReport?) {
        let port = URLComponents(string: api.baseURL)?.port ?? 80
        let pid = ServiceMemory.gatewayPid(pids: pids, gatewayPort: port)
        let before = pid.flatMap(ServiceMemory.vmRSS)
        let value = try await open()
        guard let pid, let before, let after = ServiceMemory.vmRSS(pid), streams > 0 else { return (value, nil) }
        var r = StreamMemoryReport()
        r.streams = streams
        r.rssBeforeKB = before
        r.rssAfterKB = after
        r.bytesPerStream = (after - before) * 1024 / streams
        return (value, r)
    }
}
