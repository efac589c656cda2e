import Foundation
import TestSupport
import Testing

/// `scripts/bench`'s executable when a tool it runs is not installed.
@Suite struct BenchmarkToolTests {
    /// `Benchmarks gateway` without wrk on `PATH` ends with one line naming the tool and its
    /// Debian package and status 1, before starting any service (it used to crash with a Swift
    /// backtrace, "Error raised at top level", from running /usr/bin/wrk).
    @Test func aMissingToolIsOneLineNotABacktrace() throws {
        let empty = makeTemporaryDirectory("bench-path")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "\(ServiceProcess.productsDirectory)/Benchmarks")
        p.arguments = ["gateway", "1", "1"]
        p.environment = ["PATH": empty, "DATA_DIR": empty, "LOG_LEVEL": "warning"]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationReason == .exit && p.terminationStatus == 1, "status \(p.terminationStatus): \(text)")
        let lines = text.split(separator: "\n")
        #expect(lines.count == 1, "\(text)")
        #expect(text.contains("wrk is not installed (Debian package wrk"), "\(text)")
    }
}
