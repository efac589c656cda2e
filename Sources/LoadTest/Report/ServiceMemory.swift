import Foundation

/// Peak resident memory of the service processes, from /proc/<pid>/status `VmHWM`.
enum ServiceMemory {
    static let executables = ["AuthService", "ProfileService", "NotificationService", "Gateway"]
    /// Executable names by TestSupport `Cluster` service name.
    static let names = [
        "auth": "AuthService", "profile": "ProfileService", "notification": "NotificationService",
        "gateway": "Gateway",
    ]

    /// Peak RSS in kB by executable name, plus `LoadTest` itself.
    ///
    /// With `pids` (the smoke run's own children) exactly those. Otherwise the services are
    /// found through the gateway: the process listening on `gatewayPort` (from /proc/net/tcp
    /// and its fds) and its siblings (same parent, as under scripts/run-local or a Cluster)
    /// with a service's executable name. If that fails, every process with such a name
    /// (several of one name get a `#pid` suffix).
    static func peaks(pids: [String: Int32]? = nil, gatewayPort: Int? = nil) -> [String: Int] {
        var out: [String: Int] = [:]
        for (name, pid) in processes(pids: pids, gatewayPort: gatewayPort) {
            if let kb = vmHWM(pid) { out[name] = kb }
        }
        if let kb = vmHWM(getpid()) { out["LoadTest"] = kb }
        return out
    }

    /// The service processes `peaks` reads, by name: `pids` when given, else found through the
    /// gateway's port as `peaks` describes (several of one name get a `#pid` suffix).
    static func processes(pids: [String: Int32]? = nil, gatewayPort: Int? = nil) -> [String: Int32] {
        if let pids { return pids }
        let all = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { Int32($0) }
            .compactMap { pid in processName(pid).flatMap { executables.contains($0) ? (pid, $0) : nil } }
        var chosen = all
        if let port = gatewayPort, let gw = listeningPid(port: port, among: all.map(\.0)), let parent = parentPid(gw) {
            chosen = all.filter { $0.0 == gw || parentPid($0.0) == parent }
        }
        var out: [String: Int32] = [:]
        for (pid, name) in chosen.sorted(by: { $0.0 < $1.0 }) { out[out[name] == nil ? name : "\(name)#\(pid)"] = pid }
        return out
    }

    /// Inodes of the sockets listening on TCP `port` (IPv4 and IPv6).
    static func listeningInodes(port: Int) -> Set<String> {
        var inodes = Set<String>()
        for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = readProcFile(file) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let f = line.split(separator: " ", omittingEmptySubsequences: true)
                // local_address is HEX_IP:HEX_PORT, st 0A = LISTEN, inode is field 9.
                guard f.count > 9, f[3] == "0A", let p = f[1].split(separator: ":").last, Int(p, radix: 16) == port else {
                    continue
                }
                inodes.insert(String(f[9]))
            }
        }
        return inodes
    }

    /// Reads a /proc file whole (their size reads as 0, so read until EOF).
    static func readProcFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            out.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The pid (among `candidates`) holding a socket that listens on TCP `port`.
    static func listeningPid(port: Int, among candidates: [Int32]) -> Int32? {
        let inodes = listeningInodes(port: port)
        guard !inodes.isEmpty else { return nil }
        for pid in candidates {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            for fd in fds {
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                    target.hasPrefix("socket:[")
                else { continue }
                if inodes.contains(String(target.dropFirst(8).dropLast())) { return pid }
            }
        }
        return nil
    }

    /// The parent pid from /proc/<pid>/stat (field 4, after the parenthesised name).
    static func parentPid(_ pid: Int32) -> Int32? {
        guard let text = readProcFile("/proc/\(pid)/stat"),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? Int32(fields[1]) : nil
    }

    /// The executable's base name from /proc/<pid>/cmdline (comm is cut at 15 characters).
    static func processName(_ pid: Int32) -> String? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"), !data.isEmpty
        else { return nil }
        let argv0 = data.split(separator: 0).first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        return (argv0 as NSString).lastPathComponent
    }

    /// The gateway's pid: `pids["Gateway"]` when given, else the process named `Gateway` that
    /// listens on `gatewayPort` on this machine (nil when none does, e.g. a remote gateway).
    static func gatewayPid(pids: [String: Int32]?, gatewayPort: Int) -> Int32? {
        if let pids { return pids["Gateway"] }
        let candidates = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { Int32($0) }
            .filter { processName($0) == "Gateway" }
        return listeningPid(port: gatewayPort, among: candidates)
    }

    /// Peak resident memory (kB).
    static func vmHWM(_ pid: Int32) -> Int? { statusField(pid, "VmHWM:") }

    /// Current resident memory (kB).
    static func vmRSS(_ pid: Int32) -> Int? { statusField(pid, "VmRSS:") }

    /// A `kB` field of /proc/<pid>/status, e.g. `VmRSS:`.
    private static func statusField(_ pid: Int32, _ field: String) -> Int? {
        guard let text = readProcFile("/proc/\(pid)/status") else {
            return nil
        }
        for line in text.split(separator: "\n") where line.hasPrefix(field) {
            return Int(
                line.dropFirst(field.count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        return nil
    }
}
