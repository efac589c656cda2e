import Foundation

/// Peak resident memory of the service processes, from /proc/<pid>/status `VmHWM`.
enum ServiceMemory {
    static let executables = ["AuthService", "ProfileService", "NotificationService", "Gateway"]
    /// Executable names by TestSupport `Cluster` service name.
    static let names = [
        "auth": "AuthService", "profile": "ProfileService", "notification": "NotificationService",
        "gateway": "Gateway",
    ]

    /// Peak RSS in kB by executable name (several processes of one name are summed with a
    /// `#pid` suffix each), plus `LoadTest` itself. `pids` restricts to known children when given.
    static func peaks(pids: [String: Int32]? = nil) -> [String: Int] {
        var out: [String: Int] = [:]
        if let pids {
            for (name, pid) in pids { if let kb = vmHWM(pid) { out[name] = kb } }
        } else {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            for e in entries {
                guard let pid = Int32(e) else { continue }
                guard let name = processName(pid), executables.contains(name), let kb = vmHWM(pid) else {
                    continue
                }
                out[out[name] == nil ? name : "\(name)#\(pid)"] = kb
            }
        }
        if let kb = vmHWM(getpid()) { out["LoadTest"] = kb }
        return out
    }

    /// The executable's base name from /proc/<pid>/cmdline (comm is cut at 15 characters).
    static func processName(_ pid: Int32) -> String? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"), !data.isEmpty
        else { return nil }
        let argv0 = data.split(separator: 0).first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        return (argv0 as NSString).lastPathComponent
    }

    static func vmHWM(_ pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
            return nil
        }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(
                line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        return nil
    }
}
