import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// nginx with the nchan module (Debian's `nginx` + `libnginx-mod-nchan`), started by LoadTest on
/// an ephemeral loopback port with a generated configuration in a temporary directory (pid file,
/// logs and temp paths there too), so it needs no system configuration and no privileges.
///
/// Locations: `/sub/<channel>` is an EventSource (SSE) subscriber, `/pub/<channel>` the publisher
/// (`POST` a message). One worker process. Run as root, nginx's workers drop to `nobody:nogroup`
/// (the `user` directive) and the directory is made traversable for them; otherwise the workers
/// keep the caller's user and the `user` directive is left out.
final class NginxNchan: @unchecked Sendable {
    // @unchecked: every property is set in `init` and never changes; `process` is only stopped once,
    // by the owner, from one task.
    static let binary = "/usr/sbin/nginx"
    static let module = "/usr/lib/nginx/modules/ngx_nchan_module.so"

    let port: Int
    let directory: String
    /// e.g. `nginx/1.22.1 + nchan 1:1.3.6+dfsg-2 (eventsource)`.
    let description: String
    private let process: Process

    /// Why nginx + nchan cannot run here, with what to install; nil when they can.
    static func missing() -> String? {
        let fm = FileManager.default
        let absent = [binary, module].filter { !fm.fileExists(atPath: $0) }
        guard !absent.isEmpty else { return nil }
        return "--baseline also runs nginx with nchan, which is not installed here (no \(absent.joined(separator: ", "))): "
            + "install the Debian packages nginx and libnginx-mod-nchan (scripts/install-deps nginx libnginx-mod-nchan), "
            + "or add --no-nchan"
    }

    /// Starts nginx and waits until it accepts connections.
    /// - Parameter connections: `worker_connections` (subscribers + publishing connections + slack).
    /// - Throws: `LoadTestError` when nginx is missing, exits or does not listen within 10 s (with
    ///   the tail of its error log).
    init(connections: Int) throws {
        if let m = Self.missing() { throw LoadTestError(m) }
        var template = Array((NSTemporaryDirectory() + "/loadtest-nchan-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw LoadTestError("nchan baseline: mkdtemp failed: errno \(errno)")
        }
        directory = String(cString: made)
        let root = geteuid() == 0
        var userLine = ""
        if root {
            // The workers run as nobody: they must reach the temp paths created in here.
            chmod(directory, 0o755)
            userLine = "user nobody \(getgrnam("nogroup") != nil ? "nogroup" : "nobody");"
        }
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let wanted = UInt64(connections * 2 + 64)
        let files = root ? wanted : min(wanted, UInt64(limit.rlim_max))
        var lastError = ""
        // The port is picked before nginx binds it: retry on the rare clash.
        for _ in 0..<3 {
            let port = Self.freePort()
            let conf = """
                load_module \(Self.module);
                worker_processes 1;
                worker_rlimit_nofile \(files);
                daemon off;
                pid \(directory)/nginx.pid;
                error_log \(directory)/error.log warn;
                \(userLine)
                events { worker_connections \(connections); }
                http {
                  access_log off;
                  client_body_temp_path \(directory)/body; proxy_temp_path \(directory)/proxy;
                  fastcgi_temp_path \(directory)/fcgi; uwsgi_temp_path \(directory)/uwsgi; scgi_temp_path \(directory)/scgi;
                  server {
                    listen 127.0.0.1:\(port) backlog=4096;
                    location ~ ^/sub/(\\w+)$ { nchan_subscriber eventsource; nchan_channel_id $1; }
                    location ~ ^/pub/(\\w+)$ { nchan_publisher; nchan_channel_id $1; nchan_message_timeout 120s; }
                  }
                }

                """
            try Data(conf.utf8).write(to: URL(fileURLWithPath: "\(directory)/nginx.conf"))
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Self.binary)
            p.arguments = ["-c", "\(directory)/nginx.conf", "-p", directory, "-e", "\(directory)/error.log"]
            p.standardInput = FileHandle.nullDevice
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            let deadline = Clock.nowNs() + 10_000_000_000
            while p.isRunning && Clock.nowNs() < deadline && !Self.accepts(port) { usleep(20_000) }
            if p.isRunning && Self.accepts(port) {
                self.port = port
                self.process = p
                description = "\(Self.version()) (eventsource)"
                return
            }
            if p.isRunning {
                p.terminate()
                p.waitUntilExit()
            }
            lastError = String((try? String(contentsOfFile: "\(directory)/error.log", encoding: .utf8))?.suffix(600) ?? "")
        }
        try? FileManager.default.removeItem(atPath: directory)
        throw LoadTestError("nchan baseline: nginx did not start: \(lastError)")
    }

    /// Stops nginx (SIGTERM: fast shutdown, the master stops its workers) and removes the directory.
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `nginx/<version> + nchan <Debian version>`.
    private static func version() -> String {
        func run(_ path: String, _ args: [String]) -> String {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: path)
            p.arguments = args
            let pipe = Pipe()
            p.standardOutput = pipe
            p.standardError = pipe
            guard (try? p.run()) != nil else { return "" }
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let nginx = run(binary, ["-v"]).split(separator: " ").last.map(String.init) ?? "nginx"
        let nchan = run("/usr/bin/dpkg-query", ["-W", "-f=${Version}", "libnginx-mod-nchan"])
        return "\(nginx) + nchan\(nchan.isEmpty ? "" : " \(nchan)")"
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    private static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = loopback(port)
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// An unused loopback port (bound to 0, read back, released).
    private static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = loopback(0)
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

    private static func loopback(_ port: Int) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        return addr
    }
}
