import Foundation
import Messages
import Support

/// The gateway's configuration from the environment, each with a single-machine default.
struct GatewayConfiguration: Sendable {
    /// `GATEWAY_HOST` (default `0.0.0.0`).
    var host = "0.0.0.0"
    /// `GATEWAY_PORT` (default 8080; 0 = ephemeral).
    var port = 8080
    /// `GATEWAY_RPC_TIMEOUT_MS`: deadline per service call (default 2,000 ms).
    var rpcTimeoutMs = 2_000
    /// `GATEWAY_PASSWORD_RPC_TIMEOUT_MS`: deadline of the calls that hash a password (register,
    /// login; default 10,000 ms: argon2id queues under a burst of logins).
    var passwordTimeoutMs = 10_000
    /// `GATEWAY_SSE_HEARTBEAT_SECONDS`: comment line interval on streams (default 15 s).
    var heartbeatSeconds = 15
    /// `GATEWAY_STREAM_CHECK_MS`: how often the heads of the recipients with open streams are
    /// checked for a notification that delivery lost before a silence (default 2,000 ms; the
    /// longest such a notification can be late).
    var streamCheckMs = 2_000
    /// `GATEWAY_SSE_BUFFER_BYTES`: per-stream buffer (default 256 KiB).
    var streamBufferBytes = 256 * 1024
    /// `GATEWAY_TOKEN_CACHE_SECONDS`: how long a validated token is trusted (default 30 s).
    var tokenCacheSeconds = 30
    /// `GATEWAY_MAX_CONNECTIONS`: client connections at once (default: the open-file limit less
    /// 1,024 kept for the process's own files and sockets).
    var maxConnections = 10_000
    /// `GATEWAY_MAX_STREAMS`: notification streams at once (default four fifths of the
    /// connections), so requests always have room beside the streams.
    var maxStreams = 8_000
    /// `GATEWAY_MAX_STREAMS_PER_USER`: notification streams one account may have open at once
    /// (default 16); past it a new one gets 429 `too_many_streams`.
    var maxStreamsPerUser = 16
    /// `GATEWAY_MAX_STREAMS_PER_ADDRESS`: notification streams one client address may have open
    /// at once (default 1,000; trusted proxies are not limited); past it 429 `too_many_streams`.
    var maxStreamsPerAddress = 1_000
    /// `GATEWAY_MAX_CONNECTIONS_PER_ADDRESS`: connections one peer address may have open at once
    /// (default 2,000; trusted proxies are not limited); past it a new one gets 503 and is closed.
    var maxConnectionsPerAddress = 2_000
    /// `GATEWAY_STREAM_WRITE_TIMEOUT_SECONDS`: a notification stream whose client has taken none
    /// of what waits for it for this long is closed (default 30 s).
    var streamWriteTimeoutSeconds = 30
    /// `GATEWAY_FIRST_BYTE_TIMEOUT_SECONDS`: a new connection that sends nothing for this long is
    /// closed (default 10 s).
    var firstByteTimeoutSeconds = 10
    /// `GATEWAY_REQUEST_TIMEOUT_SECONDS`: a request's head must arrive within this long of its
    /// first byte, its body may pause no longer, and an answer its client stops reading is
    /// reset after this long without progress (default 30 s; else 408 `request_timeout`).
    var requestTimeoutSeconds = 30
    /// `GATEWAY_CONNECTION_TIMEOUT_SECONDS`: idle keep-alive connection timeout (default 120 s).
    var connectionTimeoutSeconds = 120
    /// `GATEWAY_UPLOAD_BUDGET_BYTES`: bytes all uploads being received or handled may hold at once
    /// (default 256 MiB, at least one 100 MiB video); past it an upload gets 503 `server_busy` with
    /// `Retry-After` before its body is read.
    var uploadBudgetBytes = 256 << 20
    /// `GATEWAY_UPLOAD_BUDGET_PER_ADDRESS_BYTES`: what the uploads of one client address may hold
    /// of that at once (default 100 MiB, one video), so clients at one address cannot keep every
    /// other upload out; trusted proxies are not limited.
    var uploadBudgetPerAddressBytes = 100 << 20
    /// `GATEWAY_UPLOAD_MIN_BYTES_PER_SECOND`: the slowest an upload may arrive, measured over
    /// each `GATEWAY_UPLOAD_RATE_WINDOW_SECONDS` (default 1,024 B/s over 30 s; 0 = no minimum);
    /// slower, it gets 408 `request_timeout` and gives its share of the upload budget back.
    var uploadMinBytesPerSecond = 1_024
    /// `GATEWAY_UPLOAD_RATE_WINDOW_SECONDS`: see `uploadMinBytesPerSecond` (default 30 s).
    var uploadRateWindowSeconds = 30
    /// `GATEWAY_RESPONSE_BUFFER_BYTES`: bytes of response bodies the gateway may hold at once
    /// (default 64 MiB, at least one 1 MiB media chunk); media is fetched chunk by chunk only as
    /// that has room, and a media answer that cannot start gets 503 `server_busy` with `Retry-After`.
    var responseBufferBytes = 64 << 20
    /// `GATEWAY_RESPONSE_BUFFER_BYTES_PER_ADDRESS`: what the responses to one client address may
    /// hold of that at once (default 8 MiB, at least one chunk); trusted proxies are not limited.
    var responseBufferPerAddressBytes = 8 << 20
    /// `GATEWAY_TRUSTED_PROXIES`: comma-separated addresses of proxies whose `X-Forwarded-For`
    /// is believed (default none: the TCP peer is the client).
    var trustedProxies: Set<String> = []
    /// `GATEWAY_PUBLIC_URL`: the public base URL clients use (`https://api.example.com`, behind the
    /// TLS front); the gateway's own links (media URLs, the OpenAPI `servers`) are absolute on it.
    /// Default none: relative links (`PublicLinks`).
    var publicURL: String?

    init() {}

    /// - Parameter fileLimit: the process's open-file limit (for the connection defaults).
    /// - Throws: `ConfigurationError` naming the variable.
    init(_ env: Environment, fileLimit: Int) throws {
        host = env.string("GATEWAY_HOST", default: host)
        port = try env.int("GATEWAY_PORT", default: port, range: 0...65535)
        rpcTimeoutMs = try env.int("GATEWAY_RPC_TIMEOUT_MS", default: rpcTimeoutMs, range: 10...60_000)
        passwordTimeoutMs = try env.int("GATEWAY_PASSWORD_RPC_TIMEOUT_MS", default: passwordTimeoutMs, range: 10...120_000)
        heartbeatSeconds = try env.int("GATEWAY_SSE_HEARTBEAT_SECONDS", default: heartbeatSeconds, range: 1...3_600)
        streamCheckMs = try env.int("GATEWAY_STREAM_CHECK_MS", default: streamCheckMs, range: 50...3_600_000)
        streamBufferBytes = try env.int(
            "GATEWAY_SSE_BUFFER_BYTES", default: streamBufferBytes, range: 1_024...(64 << 20))
        tokenCacheSeconds = try env.int("GATEWAY_TOKEN_CACHE_SECONDS", default: tokenCacheSeconds, range: 0...3_600)
        let defaultConnections = max(64, fileLimit - 1_024)
        maxConnections = try env.int("GATEWAY_MAX_CONNECTIONS", default: defaultConnections, range: 1...1_000_000)
        maxStreams = try env.int("GATEWAY_MAX_STREAMS", default: max(1, maxConnections * 4 / 5), range: 0...1_000_000)
        maxStreamsPerUser = try env.int(
            "GATEWAY_MAX_STREAMS_PER_USER", default: maxStreamsPerUser, range: 1...1_000_000)
        maxStreamsPerAddress = try env.int(
            "GATEWAY_MAX_STREAMS_PER_ADDRESS", default: maxStreamsPerAddress, range: 1...1_000_000)
        maxConnectionsPerAddress = try env.int(
            "GATEWAY_MAX_CONNECTIONS_PER_ADDRESS", default: maxConnectionsPerAddress, range: 1...1_000_000)
        streamWriteTimeoutSeconds = try env.int(
            "GATEWAY_STREAM_WRITE_TIMEOUT_SECONDS", default: streamWriteTimeoutSeconds, range: 1...86_400)
        firstByteTimeoutSeconds = try env.int(
            "GATEWAY_FIRST_BYTE_TIMEOUT_SECONDS", default: firstByteTimeoutSeconds, range: 1...86_400)
        uploadBudgetBytes = try env.int(
            "GATEWAY_UPLOAD_BUDGET_BYTES", default: uploadBudgetBytes, range: (100 << 20)...(1 << 40))
        uploadBudgetPerAddressBytes = try env.int(
            "GATEWAY_UPLOAD_BUDGET_PER_ADDRESS_BYTES", default: min(uploadBudgetPerAddressBytes, uploadBudgetBytes),
            range: (20 << 20)...uploadBudgetBytes)
        requestTimeoutSeconds = try env.int(
            "GATEWAY_REQUEST_TIMEOUT_SECONDS", default: requestTimeoutSeconds, range: 1...86_400)
        connectionTimeoutSeconds = try env.int(
            "GATEWAY_CONNECTION_TIMEOUT_SECONDS", default: connectionTimeoutSeconds, range: 1...86_400)
        uploadMinBytesPerSecond = try env.int(
            "GATEWAY_UPLOAD_MIN_BYTES_PER_SECOND", default: uploadMinBytesPerSecond, range: 0...(1 << 30))
        uploadRateWindowSeconds = try env.int(
            "GATEWAY_UPLOAD_RATE_WINDOW_SECONDS", default: uploadRateWindowSeconds, range: 1...3_600)
        let chunk = Profile.ReadMedia.maxChunkBytes
        responseBufferBytes = try env.int(
            "GATEWAY_RESPONSE_BUFFER_BYTES", default: responseBufferBytes, range: chunk...(1 << 40))
        responseBufferPerAddressBytes = try env.int(
            "GATEWAY_RESPONSE_BUFFER_BYTES_PER_ADDRESS", default: min(responseBufferPerAddressBytes, responseBufferBytes),
            range: chunk...responseBufferBytes)
        trustedProxies = Set(
            env.string("GATEWAY_TRUSTED_PROXIES", default: "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty })
        publicURL = try PublicLinks.parse(env.optionalString("GATEWAY_PUBLIC_URL"))
    }
}

/// Raises the open-file limit (`RLIMIT_NOFILE`) to its hard limit, so thousands of connections
/// (each a descriptor) fit; the default soft limit is often 1,024.
/// - Returns: the soft limit now in force.
@discardableResult
func raiseOpenFileLimit() -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1_024 }
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    return Int(min(limit.rlim_cur, 1 << 24))
}
