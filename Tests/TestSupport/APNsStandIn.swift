import Foundation
import Harness
import Support

/// A stand-in APNs for one test: `scripts/apns-standin.py` (HTTP/2 over TLS on an ephemeral
/// 127.0.0.1 port), with a test CA, a server certificate and a provider key made for it.
///
/// ```swift
/// let apns = try await APNsStandIn.start()
/// // give a service apns.environment (APNS_URL, APNS_CA_FILE, APNS_KEY_FILE, APNS_KEY_ID,
/// // APNS_TEAM_ID, APNS_TOPIC), then:
/// try await apns.add(.unregistered(token: "ab12…", timestamp: 1_700_000_000_000))
/// let pushes = try await apns.pushes(atLeast: 3)   // waits (long poll), no sleeping
/// let stats = try await apns.stats()                // connections opened, requests, …
/// ```
///
/// The stand-in checks every request as APNs does (path, method, the ES256 provider token
/// against the key's public half, `apns-*` headers, payload ≤ 4,096 bytes and JSON with `aps`) and
/// answers a bad one with Apple's status and reason; see the script's header for the details and
/// the control API. It exits when this object goes away (its stdin closes) or on `stop()`.
/// Needs Debian's `python3-h2`, `python3-cryptography` and `openssl` (scripts/install-deps).
public final class APNsStandIn: @unchecked Sendable {
    // @unchecked: every stored property is immutable; `process` is a ChildProcess, itself
    // thread-safe.

    /// The HTTP/2 (APNs) port on 127.0.0.1.
    public let port: Int
    /// The control port (plain HTTP/1.1) on 127.0.0.1.
    public let controlPort: Int
    /// The temporary directory holding the keys, certificates and the stand-in's log.
    public let directory: String
    /// The expected `apns-topic`.
    public let topic: String
    /// The provider key's id (the JWT's `kid`).
    public let keyID: String
    /// The team id (the JWT's `iss`).
    public let teamID: String
    /// The test CA's certificate, PEM: what `APNS_CA_FILE` names.
    public let caFile: String
    /// The provider key, a PKCS#8 PEM EC P-256 private key like Apple's `.p8`.
    public let keyFile: String
    /// The provider key's public half, PEM (the stand-in checks signatures with it).
    public let publicKeyFile: String
    /// The stand-in's stderr.
    public let logFile: String
    private let process: ChildProcess

    /// `https://127.0.0.1:<port>`: what `APNS_URL` is set to.
    public var url: String { "https://127.0.0.1:\(port)" }

    /// The `APNS_*` variables that point a client (or a service) at this stand-in.
    public var environment: [String: String] {
        [
            "APNS_URL": url, "APNS_CA_FILE": caFile, "APNS_KEY_FILE": keyFile, "APNS_KEY_ID": keyID,
            "APNS_TEAM_ID": teamID, "APNS_TOPIC": topic,
        ]
    }

    /// The Python that has Debian's `python3-h2` (`/usr/bin/python3`, or `APNS_STANDIN_PYTHON`).
    static var python: String { ProcessInfo.processInfo.environment["APNS_STANDIN_PYTHON"] ?? "/usr/bin/python3" }

    /// `scripts/apns-standin.py` of this package (or `APNS_STANDIN_SCRIPT`).
    static var script: String {
        if let path = ProcessInfo.processInfo.environment["APNS_STANDIN_SCRIPT"] { return path }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/apns-standin.py").path
    }

    /// Makes the keys and certificates in a new temporary directory, starts the stand-in and
    /// waits for its `READY` line.
    /// - Throws: `TestSupportError` when `openssl` fails or the stand-in exits before it is ready
    ///   (the message carries its log: a missing `h2` module shows there).
    public static func start(
        topic: String = "com.example.insta", keyID: String = "KEY1234567", teamID: String = "TEAM123456",
        timeout: Double = 30
    ) async throws -> APNsStandIn {
        let dir = makeTemporaryDirectory("apns-standin")
        try makeCredentials(in: dir)
        let log = "\(dir)/standin.log"
        let p = try ChildProcess(
            python,
            [
                script, "--cert", "\(dir)/server.pem", "--key", "\(dir)/server.key", "--public-key",
                "\(dir)/apns-key.pub", "--topic", topic, "--team-id", teamID, "--key-id", keyID,
            ],
            stdin: .pipe, stdout: .pipe, stderr: .file(log))
        let watchdog = Task.detached {
            try await Task.sleep(for: .seconds(timeout))
            p.signal(SIGKILL)
        }
        defer { watchdog.cancel() }
        let ports: (Int, Int) = try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                var buffer: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = chunk.withUnsafeMutableBytes { read(p.standardOutput, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 {
                        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                        continuation.resume(
                            throwing: TestSupportError(
                                "apns-standin exited before ready (needs python3-h2 and python3-cryptography, "
                                    + "scripts/install-deps): \(text.suffix(2000))"))
                        return
                    }
                    buffer += chunk[0..<n]
                    guard let nl = buffer.firstIndex(of: 10) else { continue }
                    let fields = String(decoding: buffer[..<nl], as: UTF8.self).split(separator: " ")
                    if fields.count == 3, fields[0] == "READY", let port = Int(fields[1]), let control = Int(fields[2]) {
                        continuation.resume(returning: (port, control))
                    } else {
                        continuation.resume(throwing: TestSupportError("apns-standin: unexpected first line \(fields)"))
                    }
                    // Keep draining stdout so the child never blocks on a full pipe.
                    _ = p.readToEnd(p.standardOutput)
                    return
                }
            }
            thread.start()
        }
        return APNsStandIn(
            port: ports.0, controlPort: ports.1, directory: dir, topic: topic, keyID: keyID, teamID: teamID,
            logFile: log, process: p)
    }

    private init(
        port: Int, controlPort: Int, directory: String, topic: String, keyID: String, teamID: String, logFile: String,
        process: ChildProcess
    ) {
        self.port = port
        self.controlPort = controlPort
        self.directory = directory
        self.topic = topic
        self.keyID = keyID
        self.teamID = teamID
        self.caFile = "\(directory)/ca.pem"
        self.keyFile = "\(directory)/apns-key.p8"
        self.publicKeyFile = "\(directory)/apns-key.pub"
        self.logFile = logFile
        self.process = process
    }

    /// Stops the stand-in (SIGTERM) and waits for it.
    public func stop() {
        process.signal(SIGTERM)
        process.waitUntilExit()
    }

    deinit { stop() }

    /// Writes, with the `openssl` CLI: a test CA (`ca.pem`), a server certificate for 127.0.0.1
    /// and localhost signed by it (`server.pem`, `server.key`), and a provider key
    /// (`apns-key.p8`, PKCS#8 PEM, P-256) with its public half (`apns-key.pub`).
    public static func makeCredentials(in dir: String) throws {
        let p256 = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        let serverExtensions = """
            subjectAltName=IP:127.0.0.1,DNS:localhost
            basicConstraints=CA:FALSE
            keyUsage=digitalSignature
            extendedKeyUsage=serverAuth

            """
        try serverExtensions.write(toFile: "\(dir)/server.ext", atomically: true, encoding: .utf8)
        let steps: [[String]] = [
            ["req", "-x509"] + p256 + [
                "-keyout", "\(dir)/ca.key", "-out", "\(dir)/ca.pem", "-days", "2", "-subj", "/CN=APNs stand-in test CA",
            ],
            ["req"] + p256 + ["-keyout", "\(dir)/server.key", "-out", "\(dir)/server.csr", "-subj", "/CN=127.0.0.1"],
            [
                "x509", "-req", "-in", "\(dir)/server.csr", "-CA", "\(dir)/ca.pem", "-CAkey", "\(dir)/ca.key",
                "-set_serial", "\(UInt32.random(in: 1...UInt32.max))", "-days", "2", "-extfile", "\(dir)/server.ext",
                "-out", "\(dir)/server.pem",
            ],
            ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(dir)/apns-key.p8"],
            ["pkey", "-in", "\(dir)/apns-key.p8", "-pubout", "-out", "\(dir)/apns-key.pub"],
        ]
        let log = "\(dir)/openssl.log"
        for arguments in steps {
            let result = try ChildProcess.output("/usr/bin/openssl", arguments, stderr: .file(log))
            guard result.termination == .exited(0) else {
                let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                throw TestSupportError("openssl \(arguments.joined(separator: " ")) failed: \(text.suffix(1000))")
            }
        }
    }

    // MARK: Control

    /// How the stand-in answers requests that pass its checks, instead of 200.
    public struct Rule: Sendable {
        /// The JSON the control port takes (see the script's header).
        public var fields: [String: any Sendable]

        /// A rule answering `status` with `reason`; `token` limits it to one device token,
        /// `count` is how many requests it answers (default 1 without `token`, unlimited with).
        public init(
            status: Int, reason: String, timestamp: Int64? = nil, retryAfter: Int? = nil, token: String? = nil,
            count: Int? = nil
        ) {
            var f: [String: any Sendable] = ["status": status, "reason": reason]
            if let timestamp { f["timestamp"] = timestamp }
            if let retryAfter { f["retryAfter"] = retryAfter }
            if let token { f["token"] = token }
            if let count { f["count"] = count }
            fields = f
        }

        /// 410 `Unregistered` with its `timestamp` (ms since 1970).
        public static func unregistered(token: String? = nil, timestamp: Int64, count: Int? = nil) -> Rule {
            Rule(status: 410, reason: "Unregistered", timestamp: timestamp, token: token, count: count)
        }
        /// 400 `BadDeviceToken`.
        public static func badDeviceToken(token: String? = nil, count: Int? = nil) -> Rule {
            Rule(status: 400, reason: "BadDeviceToken", token: token, count: count)
        }
        /// 413 `PayloadTooLarge`.
        public static func payloadTooLarge(token: String? = nil, count: Int? = nil) -> Rule {
            Rule(status: 413, reason: "PayloadTooLarge", token: token, count: count)
        }
        /// 429 `TooManyRequests` with `Retry-After: retryAfter` (seconds).
        public static func tooManyRequests(retryAfter: Int?, token: String? = nil, count: Int? = nil) -> Rule {
            Rule(status: 429, reason: "TooManyRequests", retryAfter: retryAfter, token: token, count: count)
        }
        /// 503 `ServiceUnavailable`.
        public static func serviceUnavailable(retryAfter: Int? = nil, token: String? = nil, count: Int? = nil) -> Rule {
            Rule(status: 503, reason: "ServiceUnavailable", retryAfter: retryAfter, token: token, count: count)
        }
        /// 403 `ExpiredProviderToken`, once by default.
        public static func expiredProviderToken(count: Int = 1) -> Rule {
            Rule(status: 403, reason: "ExpiredProviderToken", count: count)
        }
        /// Closes the connection without answering (its other streams die with it).
        public static func dropConnection(token: String? = nil, count: Int? = nil) -> Rule {
            var rule = Rule(status: 0, reason: "", token: token, count: count)
            rule.fields = rule.fields.filter { $0.key == "token" || $0.key == "count" }
            rule.fields["drop"] = true
            return rule
        }
    }

    /// A push the stand-in accepted (answered 200).
    public struct Push: Sendable, Decodable, Equatable {
        /// The device token from the path.
        public var token: String
        /// The request path, `/3/device/<token>`.
        public var path: String
        /// The request's header fields (lowercase names, pseudo-headers left out).
        public var headers: [String: String]
        /// The payload, as sent.
        public var payload: String
        /// When it arrived, seconds since 1970.
        public var time: Double
        /// Which connection carried it (1 = the first one opened).
        public var connection: Int
    }

    /// A request that reached the stand-in, accepted or not.
    public struct Request: Sendable, Decodable, Equatable {
        /// The request path (`:path`).
        public var path: String?
        /// The device token, when the request passed the checks.
        public var token: String?
        /// The request's header fields (lowercase names, pseudo-headers left out).
        public var headers: [String: String]
        /// The status answered; 0 when the connection was dropped instead.
        public var status: Int
        /// The reason answered (nil for 200).
        public var reason: String?
        /// Which connection carried it (1 = the first one opened).
        public var connection: Int
    }

    /// The stand-in's counts since start or `reset()`.
    public struct Stats: Sendable, Decodable, Equatable {
        /// Connections opened (TLS with h2 negotiated).
        public var connections: Int
        /// Connections open now.
        public var open: Int
        /// Requests answered or dropped.
        public var requests: Int
        /// Requests answered 200.
        public var accepted: Int
        /// Distinct provider tokens (JWTs) that passed the checks.
        public var tokens: Int
        /// The stand-in's CPU time since it started (user + system), seconds: what it cost, for
        /// load tests that run it beside the system under test.
        public var cpuSeconds: Double
    }

    /// Adds a rule (rules are tried in the order added).
    public func add(_ rule: Rule) async throws {
        _ = try await control("POST", "/rules", json: rule.fields)
    }

    /// The accepted pushes, oldest first, after the first `since`; waits up to `timeout` seconds
    /// until `atLeast` have been accepted in all (returns what there is then).
    public func pushes(atLeast: Int = 0, since: Int = 0, timeout: Double = 30) async throws -> [Push] {
        let path = "/pushes?atLeast=\(atLeast)&since=\(since)&timeout=\(timeout)"
        return try decode(try await control("GET", path, timeout: Int(timeout) + 30))
    }

    /// Every request so far, with what it was answered.
    public func requests() async throws -> [Request] {
        try decode(try await control("GET", "/requests"))
    }

    /// Connections and requests counted so far.
    public func stats() async throws -> Stats {
        try decode(try await control("GET", "/stats"))
    }

    /// Forgets rules, pushes, requests and counts.
    public func reset() async throws {
        _ = try await control("POST", "/reset")
    }

    private func decode<T: Decodable>(_ response: HTTPResponse) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(response.body))
        } catch {
            throw TestSupportError("apns-standin control: \(error) in \(response.text.prefix(500))")
        }
    }

    /// One control request, on a thread of its own (the client blocks; `pushes` long-polls).
    private func control(_ method: String, _ path: String, json: [String: any Sendable]? = nil, timeout: Int = 30)
        async throws -> HTTPResponse
    {
        let client = HTTPClient(port: controlPort)
        let response: HTTPResponse = try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result { try client.request(method, path, json: json, timeoutSeconds: timeout) })
            }.start()
        }
        guard response.status == 200 else {
            throw TestSupportError("apns-standin control \(method) \(path): \(response.status) \(response.text)")
        }
        return response
    }
}
