import Shared

/// The gateway's configuration from the environment, each with a single-machine default.
struct GatewayConfig: Sendable {
    /// `GATEWAY_HOST` (default `0.0.0.0`).
    var host: String
    /// `GATEWAY_PORT` (default 8080; 0 = ephemeral).
    var port: Int
    /// `GATEWAY_RPC_TIMEOUT_MS`: deadline per service call (default 2,000 ms).
    var rpcTimeoutMs: Int
    /// `GATEWAY_SSE_HEARTBEAT_SECONDS`: comment line interval on streams (default 15 s).
    var heartbeatSeconds: Int
    /// `GATEWAY_SSE_BUFFER_BYTES`: per-stream buffer (default 256 KiB).
    var streamBufferBytes: Int
    /// `GATEWAY_TOKEN_CACHE_SECONDS`: how long a validated token is trusted (default 30 s).
    var tokenCacheSeconds: Int
    /// `GATEWAY_MAX_CONNECTIONS` (default 10,000).
    var maxConnections: Int
    /// `GATEWAY_CONNECTION_TIMEOUT_SECONDS`: idle connection timeout (default 120 s).
    var connectionTimeoutSeconds: Int

    /// - Throws: `ConfigurationError` naming the variable.
    init(_ env: Environment) throws {
        host = env.string("GATEWAY_HOST", default: "0.0.0.0")
        port = try env.int("GATEWAY_PORT", default: 8080, range: 0...65535)
        rpcTimeoutMs = try env.int("GATEWAY_RPC_TIMEOUT_MS", default: 2_000, range: 10...60_000)
        heartbeatSeconds = try env.int("GATEWAY_SSE_HEARTBEAT_SECONDS", default: 15, range: 1...3_600)
        streamBufferBytes = try env.int(
            "GATEWAY_SSE_BUFFER_BYTES", default: 256 * 1024, range: 1_024...(64 << 20))
        tokenCacheSeconds = try env.int("GATEWAY_TOKEN_CACHE_SECONDS", default: 30, range: 0...3_600)
        maxConnections = try env.int("GATEWAY_MAX_CONNECTIONS", default: 10_000, range: 1...1_000_000)
        connectionTimeoutSeconds = try env.int(
            "GATEWAY_CONNECTION_TIMEOUT_SECONDS", default: 120, range: 1...86_400)
    }
}
