import Foundation
import Harness
import Wire

/// `scripts/bench gateway [seconds] [connections]`: wrk against the real four executables —
/// `/healthz` (the HTTP server alone), `GET /v1/me` (a cached-token read: one ProfileService
/// call), `GET /v1/users/{username}` (the profile header: ProfileService and NotificationService
/// concurrently) — beside the same wrk run against a static file served by nginx, with each
/// figure's ratio to nginx, the CPU microseconds each process spent per request (from
/// `/proc/<pid>/stat` over each wrk run; nginx counted with its workers), and the voluntary
/// context switches per request (every thread's, `/proc/<pid>/task/*/status`): a thread that
/// blocks to wait for another is a handoff paid for in a wakeup. The switches are also counted
/// with one connection (`wrk -c1`), where nothing batches: the handoffs one request costs.
enum GatewayBenchmark {
    struct Figures {
        var requestsPerSecond: Double
        var p50Ms: Double
        var p99Ms: Double
        var non2xx: Int
        /// Requests wrk completed ("N requests in").
        var requests = 0
        /// CPU microseconds per completed request, by process group (`nginx` = master and
        /// workers; the cluster's services by name); empty when not measured.
        var cpuMicrosecondsPerRequest: [String: Double] = [:]
        /// Voluntary context switches per completed request, by process group; empty when not
        /// measured.
        var switchesPerRequest: [String: Double] = [:]
    }

    /// - Throws: `MissingTool` (before anything starts) when wrk or nginx is not installed.
    static func run(_ options: [String]) async throws {
        let wrkPath = try MissingTool.locate("wrk", package: "wrk")
        let nginxPath = try MissingTool.locate("nginx", package: "nginx")
        let seconds = options.first.flatMap { Int($0) } ?? 10
        let connections = options.count > 1 ? Int(options[1]) ?? 64 : 64
        let cluster = Cluster(extraEnvironment: ["LOG_LEVEL": "warning"])
        try await cluster.start(["auth", "profile", "notification", "gateway"])
        defer { cluster.stopAll() }
        let port = cluster.gatewayPort
        let http = HTTPClient(port: port)
        let nginx = try Nginx.start(executable: nginxPath)
        defer { nginx.stop() }

        // CPU per request: each process's CPU time over a wrk run ÷ the requests wrk completed.
        var processes: [String: [Int32]] = ["nginx": ProcessCPU.withChildren(nginx.process.processIdentifier)]
        for (service, process) in cluster.processes { if let pid = process.pid { processes[service] = [pid] } }
        var rows: [(String, Figures?)] = []
        func wrk(_ url: String, headers: [String] = [], connections: Int = connections) throws -> Figures? {
            let before = ProcessCPU.snapshot(processes)
            let switchesBefore = ProcessCPU.voluntarySwitches(processes)
            var figures = try Self.wrk(
                url, seconds: seconds, connections: connections, headers: headers, executable: wrkPath)
            let after = ProcessCPU.snapshot(processes)
            let switchesAfter = ProcessCPU.voluntarySwitches(processes)
            if let requests = figures?.requests, requests > 0 {
                figures?.cpuMicrosecondsPerRequest = after.reduce(into: [:]) { out, entry in
                    let used = entry.value - (before[entry.key] ?? entry.value)
                    let perRequest = used * 1000 / Double(requests)
                    if perRequest >= 0.5 { out[entry.key] = perRequest }
                }
                figures?.switchesPerRequest = switchesAfter.reduce(into: [:]) { out, entry in
                    let perRequest = Double(entry.value - (switchesBefore[entry.key] ?? entry.value)) / Double(requests)
                    if perRequest >= 0.05 { out[entry.key] = perRequest }
                }
            }
            return figures
        }
        let staticFigures = try wrk("http://127.0.0.1:\(nginx.port)/static.json")
        rows.append(("nginx static file", staticFigures))
        rows.append(("gateway /healthz", try wrk("http://127.0.0.1:\(port)/healthz")))

        let tag = RandomID.make().prefix(6)
        let alice = "bench\(tag)a"
        let bob = "bench\(tag)b"
        var token: String?
        for name in [alice, bob] {
            let r = try http.request(
                "POST", "/v1/auth/register",
                json: [
                    "email": "\(name)@example.com", "username": name, "password": "correct-horse-9",
                    "name": name,
                ])
            if r.status != 201 {
                print("register \(name) failed: \(r.status) \(r.text.prefix(200))")
            } else if name == bob {
                token = r.object["token"] as? String
            }
        }
        if let token {
            _ = try http.request("PUT", "/v1/users/\(alice)/follow", token: token, json: [String: Any]())
            let header = ["Authorization: Bearer \(token)"]
            rows.append(("GET /v1/me (cached token)", try wrk("http://127.0.0.1:\(port)/v1/me", headers: header)))
            rows.append(
                ("GET /v1/users/{u} (profile header)", try wrk("http://127.0.0.1:\(port)/v1/users/\(alice)", headers: header)))
            rows.append(
                (
                    "header, one connection (-c1)",
                    try wrk("http://127.0.0.1:\(port)/v1/users/\(alice)", headers: header, connections: 1)
                ))
        }
        print(
            "gateway benchmark: wrk -t2 -c\(connections) -d\(seconds)s on \(ProcessInfo.processInfo.activeProcessorCount) cores"
        )
        print(String(repeating: "-", count: 100))
        print(
            pad("target", 36) + pad("req/s", 12) + pad("p50 ms", 10) + pad("p99 ms", 10)
                + pad("non-2xx", 10) + "req/s vs nginx")
        for (name, f) in rows {
            guard let f else {
                print(pad(name, 36) + "failed")
                continue
            }
            let ratio =
                staticFigures.map {
                    String(format: "%.3f", f.requestsPerSecond / max($0.requestsPerSecond, 1))
                } ?? "-"
            print(
                pad(name, 36) + pad(String(format: "%.0f", f.requestsPerSecond), 12)
                    + pad(String(format: "%.2f", f.p50Ms), 10)
                    + pad(String(format: "%.2f", f.p99Ms), 10) + pad("\(f.non2xx)", 10) + ratio)
        }
        print(String(repeating: "-", count: 100))
        print(pad("target", 36) + "CPU µs per request: total (by process)")
        for (name, f) in rows {
            guard let cpu = f?.cpuMicrosecondsPerRequest, !cpu.isEmpty else { continue }
            let parts = cpu.sorted { $0.key < $1.key }.map { String(format: "%@ %.0f", $0.key, $0.value) }
            print(
                pad(name, 36) + String(format: "%.0f", cpu.values.reduce(0, +)) + "  (" + parts.joined(separator: ", ")
                    + ")")
        }
        print(String(repeating: "-", count: 100))
        print(pad("target", 36) + "voluntary context switches per request: total (by process)")
        for (name, f) in rows {
            guard let switches = f?.switchesPerRequest, !switches.isEmpty else { continue }
            let parts = switches.sorted { $0.key < $1.key }.map { String(format: "%@ %.1f", $0.key, $0.value) }
            print(
                pad(name, 36) + String(format: "%.1f", switches.values.reduce(0, +)) + "  ("
                    + parts.joined(separator: ", ") + ")")
        }
    }

    private static func pad(_ s: String, _ n: Int) -> String {
        s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count)
    }

    /// Runs wrk and parses requests/s and the latency percentiles (`--latency`).
    static func wrk(
        _ url: String, seconds: Int, connections: Int, headers: [String] = [], executable: String
    ) throws
        -> Figures?
    {
        var args = ["-t\(min(2, connections))", "-c\(connections)", "-d\(seconds)s", "--latency"]
        for h in headers { args += ["-H", h] }
        args.append(url)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        var f = Figures(requestsPerSecond: 0, p50Ms: 0, p99Ms: 0, non2xx: 0)
        var found = false
        for raw in text.split(separator: "\n") {
            let parts = raw.split(separator: " ", omittingEmptySubsequences: true)
            if raw.hasPrefix("Requests/sec:"), parts.count >= 2, let v = Double(parts[1]) {
                f.requestsPerSecond = v
                found = true
            } else if parts.count == 2, parts[0] == "50%" {
                f.p50Ms = milliseconds(String(parts[1]))
            } else if parts.count == 2, parts[0] == "99%" {
                f.p99Ms = milliseconds(String(parts[1]))
            } else if parts.count > 2, parts[1] == "requests", parts[2] == "in", let n = Int(parts[0]) {
                f.requests = n
            } else if raw.contains("Non-2xx or 3xx responses:"), let last = parts.last, let n = Int(last) {
                f.non2xx = n
            }
        }
        return found ? f : nil
    }

    private static func milliseconds(_ s: String) -> Double {
        for (suffix, factor) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0), ("m", 60_000.0)]
        where s.hasSuffix(suffix) {
            return (Double(s.dropLast(suffix.count)) ?? 0) * factor
        }
        return Double(s) ?? 0
    }
}

/// A tool a benchmark runs that is not installed: one line naming it and its Debian package.
struct MissingTool: Error, CustomStringConvertible {
    let name: String
    let package: String
    var description: String {
        "\(name) is not installed (Debian package \(package); scripts/bench installs it)"
    }

    /// The path of executable `name` on `PATH` (then `/usr/sbin`, where Debian puts nginx).
    /// - Throws: `MissingTool` when there is none.
    static func locate(_ name: String, package: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":").map(String.init) + ["/usr/sbin"] {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw MissingTool(name: name, package: package)
    }
}

/// nginx serving one small static JSON file from a temporary directory, as the baseline.
struct Nginx {
    let process: Process
    let port: Int

    static func start(executable: String) throws -> Nginx {
        let dir = makeTemporaryDirectory("bench-nginx")
        try Data(#"{"status":"ok"}"#.utf8).write(to: URL(fileURLWithPath: "\(dir)/static.json"))
        let port = freePort()
        let conf = """
            worker_processes 1;
            daemon off;
            pid \(dir)/nginx.pid;
            error_log \(dir)/error.log;
            events { worker_connections 4096; }
            http {
              access_log off;
              client_body_temp_path \(dir)/body; proxy_temp_path \(dir)/proxy; fastcgi_temp_path \(dir)/fcgi;
              uwsgi_temp_path \(dir)/uwsgi; scgi_temp_path \(dir)/scgi;
              default_type application/json;
              server { listen 127.0.0.1:\(port); root \(dir); }
            }
            """
        try Data(conf.utf8).write(to: URL(fileURLWithPath: "\(dir)/nginx.conf"))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = ["-c", "\(dir)/nginx.conf", "-p", dir]
        p.standardError = FileHandle.nullDevice
        try p.run()
        // Wait until it accepts connections.
        let deadline = Timestamp.nowMs() + 5_000
        while Timestamp.nowMs() < deadline {
            if (try? HTTPClient(port: port).request("GET", "/static.json").status) == 200 { break }
            usleep(20_000)
        }
        return Nginx(process: p, port: port)
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }

    /// An unused loopback port.
    private static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
