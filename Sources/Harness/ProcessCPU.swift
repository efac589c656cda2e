import Foundation

/// CPU time of processes, from `/proc` (proc(5)): what a benchmark or LoadTest divides by the
/// work done to report CPU per request or action, the figure machine noise disturbs least.
public enum ProcessCPU {
    /// CPU time (user + system) process `pid` has used, in milliseconds: fields 14 and 15 of
    /// `/proc/<pid>/stat`, in clock ticks of `sysconf(_SC_CLK_TCK)`; nil when unreadable.
    public static func milliseconds(_ pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After the parenthesised name: field 3 (state) is index 0, so utime (14) is index 11.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) * 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// `pid` and its direct children (`/proc/<pid>/task/*/children`): an nginx master and its
    /// workers, which do the work.
    public static func withChildren(_ pid: Int32) -> [Int32] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var out = [pid]
        for task in tasks {
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? ""
            out += text.split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
        return out
    }

    /// Context switches of every thread of process `pid` so far: `voluntary_ctxt_switches` (the
    /// thread blocked: it waited for another thread, a lock, a socket or a timer, so each one is
    /// a handoff or a wakeup paid for) and `nonvoluntary_ctxt_switches` (preempted), summed over
    /// `/proc/<pid>/task/*/status` (proc(5)). Threads that have exited are not counted.
    public static func contextSwitches(_ pid: Int32) -> (voluntary: Int, involuntary: Int) {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var voluntary = 0
        var involuntary = 0
        for task in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else {
                continue
            }
            for line in text.split(separator: "\n") {
                if line.hasPrefix("voluntary_ctxt_switches:") {
                    voluntary += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                } else if line.hasPrefix("nonvoluntary_ctxt_switches:") {
                    involuntary += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
        }
        return (voluntary, involuntary)
    }

    /// Voluntary context switches of each named group of processes now (a group's summed; see
    /// `contextSwitches`).
    public static func voluntarySwitches(_ groups: [String: [Int32]]) -> [String: Int] {
        groups.mapValues { pids in pids.map { contextSwitches($0).voluntary }.reduce(0, +) }
    }

    /// CPU milliseconds of each named group of processes now (a group's processes summed).
    public static func snapshot(_ groups: [String: [Int32]]) -> [String: Double] {
        groups.mapValues { pids in pids.compactMap(milliseconds).reduce(0, +) }
    }
}
