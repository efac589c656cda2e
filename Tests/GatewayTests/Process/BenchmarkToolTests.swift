import Foundation
import Harness
import Support
import TestSupport
import Testing

/// `scripts/bench`'s executable when a tool it runs is not installed.
@Suite struct BenchmarkToolTests {
    /// `Benchmarks gateway` without wrk on `PATH` ends with one line naming the tool and its
    /// Debian package and status 1, before starting any service (it used to crash with a Swift
    /// backtrace, "Error raised at top level", from running /usr/bin/wrk).
    @Test func aMissingToolIsOneLineNotABacktrace() throws {
        let empty = makeTemporaryDirectory("bench-path")
        let p = try ChildProcess(
            "\(ServiceProcess.productsDirectory)/Benchmarks", ["gateway", "1", "1"],
            environment: ["PATH": empty, "DATA_DIR": empty, "LOG_LEVEL": "warning"], stdout: .null, stderr: .pipe)
        let text = String(decoding: p.readToEnd(p.standardError), as: UTF8.self)
        let termination = p.waitUntilExit()
        #expect(termination == .exited(1), "\(termination): \(text)")
        let lines = text.split(separator: "\n")
        #expect(lines.count == 1, "\(text)")
        #expect(text.contains("wrk is not installed (Debian package wrk"), "\(text)")
    }
}
