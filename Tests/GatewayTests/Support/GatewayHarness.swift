import Foundation
import Harness
import TestSupport
import Wire

/// The real Gateway executable in front of `FakeBackends`.
final class GatewayHarness: @unchecked Sendable {
    // @unchecked: immutable after init; the process object is thread-safe.
    let fakes: FakeBackends
    let process: ServiceProcess
    let port: Int
    var http: HTTPClient { HTTPClient(port: port) }

    /// Starts the fakes and the gateway; waits until the gateway's auth subscriber has read the
    /// producer's head and caught up (two `ops.replay` calls), so session revocations reach it.
    static func start(_ extra: [String: String] = [:]) async throws -> GatewayHarness {
        let fakes = try FakeBackends()
        // Tests check behaviour, not speed: generous deadlines on a shared, loaded machine.
        let generous = ["GATEWAY_RPC_TIMEOUT_MS": "20000", "GATEWAY_PASSWORD_RPC_TIMEOUT_MS": "60000"]
        let env = fakes.gatewayEnvironment.merging(generous) { $1 }.merging(extra) { $1 }
        let process = ServiceProcess("Gateway", environment: env, logDirectory: fakes.directory)
        let fields = try await process.start()
        let harness = GatewayHarness(
            fakes: fakes, process: process, port: Int(fields["port"] ?? "") ?? 0)
        let deadline = Timestamp.nowMs() + 60_000
        while Timestamp.nowMs() < deadline {
            if fakes.auth.counterSnapshot()["requests.ops.replay"] ?? 0 >= 2 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        return harness
    }

    private init(fakes: FakeBackends, process: ServiceProcess, port: Int) {
        self.fakes = fakes
        self.process = process
        self.port = port
    }

    func stop() {
        process.stop()
        fakes.stop()
    }
}

/// Runs a blocking `HTTPClient` request on its own thread, so tests never block the
/// cooperative pool that the in-process fake services need.
func fetch(
    _ port: Int, _ method: String, _ path: String, token: String? = nil, json: Any? = nil,
    raw: [UInt8]? = nil,
    headers: [String: String] = [:]
) async throws -> HTTPResponse {
    var raw = raw
    var headers = headers
    if let json {
        raw = Array(try JSONSerialization.data(withJSONObject: json, options: [.fragmentsAllowed]))
        if headers["Content-Type"] == nil { headers["Content-Type"] = "application/json" }
    }
    let (body, head) = (raw, headers)
    return try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do {
                continuation.resume(
                    returning: try HTTPClient(port: port).request(
                        method, path, token: token, raw: body, headers: head))
            } catch {
                continuation.resume(throwing: error)
            }
        }
        thread.start()
    }
}

extension GatewayHarness {
    func request(
        _ method: String, _ path: String, token: String? = nil, json: Any? = nil, raw: [UInt8]? = nil,
        headers: [String: String] = [:]
    ) async throws -> HTTPResponse {
        try await fetch(port, method, path, token: token, json: json, raw: raw, headers: headers)
    }
}
