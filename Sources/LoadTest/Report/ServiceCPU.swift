import Foundation
import Harness

/// CPU time of the stack's processes over a scenario's measured window: the figure machine noise
/// disturbs least (a busy neighbour stretches latency, but hardly the CPU a request costs).
struct ServiceCPU: Sendable {
    /// The processes counted, by name (see `ServiceMemory.processes`), plus `LoadTest` itself.
    let pids: [String: Int32]
    /// CPU milliseconds of each process when the window opened.
    let start: [String: Double]

    /// Opens the window: reads each process's CPU time now.
    init(pids: [String: Int32]? = nil, gatewayPort: Int?) {
        var chosen = ServiceMemory.processes(pids: pids, gatewayPort: gatewayPort)
        chosen["LoadTest"] = getpid()
        self.pids = chosen
        self.start = chosen.compactMapValues { ProcessCPU.milliseconds($0) }
    }

    /// Closes the window: the CPU milliseconds each service process used since `init` (LoadTest
    /// itself is reported apart, under its own name, and left out of `total`), and their sum as
    /// `total`. A process that is gone by now is left out.
    func used() -> [String: Double] {
        var out: [String: Double] = [:]
        for (name, pid) in pids {
            guard let before = start[name], let after = ProcessCPU.milliseconds(pid) else { continue }
            out[name] = after - before
        }
        out["total"] = out.filter { $0.key != "LoadTest" }.values.reduce(0, +)
        return out
    }

    /// Fills `report.cpuMs` and `report.cpuPerActionMs` (each process's CPU ÷ `actions`).
    func record(into report: inout RunReport, actions: Int) {
        let used = used()
        report.cpuMs = used
        report.cpuPerActionMs = actions > 0 ? used.mapValues { $0 / Double(actions) } : [:]
    }
}
