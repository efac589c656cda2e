import Foundation
import Support
import Synchronization
import Wire

/// Errors from launching or talking to the real executables in tests.
public struct TestSupportError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A real service executable run as a child process, for integration tests.
///
/// `start()` waits for the `READY {...}` line the service prints on stdout once its sockets are
/// bound (no sleeping); stderr goes to a log file kept for post-mortems.
public final class ServiceProcess: @unchecked Sendable {
    // @unchecked: `process` and `ready` are only touched under `lock`.
    public let name: String
    public let environment: [String: String]
    public let logPath: String
    /// A command the executable is started through (its path is appended as the last argument),
    /// e.g. `TestDNSServer.launcher`; empty: started directly.
    public let launcher: [String]
    private let lock = NSLock()
    private var process: ChildProcess?

    /// The directory holding the built executables (next to the test bundle), or `PRODUCTS_DIR`.
    public static var productsDirectory: String {
        if let dir = ProcessInfo.processInfo.environment["PRODUCTS_DIR"] { return dir }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // …/debug/InstaBackendPackageTests.xctest may be a directory bundle on some setups.
        while url.lastPathComponent.hasSuffix(".xctest") || url.lastPathComponent == "MacOS"
            || url.lastPathComponent == "Contents"
        {
            url = url.deletingLastPathComponent()
        }
        return url.path
    }

    /// - Parameters:
    ///   - name: executable name, e.g. `AuthService`.
    ///   - environment: added to the test's own environment.
    ///   - launcher: see the property. The command must end by exec'ing the executable, so that
    ///     `pid`, `stop()` and `kill()` reach the service itself.
    public init(_ name: String, environment: [String: String], logDirectory: String, launcher: [String] = []) {
        self.name = name
        self.environment = environment
        self.logPath = "\(logDirectory)/\(name)-\(RandomID.make().prefix(6)).log"
        self.launcher = launcher
    }

    /// Starts the process and waits (up to `timeout` seconds) for its ready line.
    /// - Returns: the ready line's fields (e.g. `rpc`, `events`, `port`).
    /// - Throws: `TestSupportError` if it exits or does not get ready in time.
    public func start(timeout: Double = 60) async throws -> [String: String] {
        let executable = "\(Self.productsDirectory)/\(name)"
        let command: String
        let arguments: [String]
        if let first = launcher.first {
            command = first
            arguments = Array(launcher.dropFirst()) + [executable]
        } else {
            command = executable
            arguments = []
        }
        let p = try ChildProcess(
            command, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            stdin: .null, stdout: .pipe, stderr: .file(logPath))
        lock.withLock { process = p }
        // Not ready in time: kill it, so the reader below sees end of file and throws.
        let watchdog = Task.detached {
            try await Task.sleep(for: .seconds(timeout))
            p.signal(SIGKILL)
        }
        defer { watchdog.cancel() }
        let path = logPath
        let name = self.name
        return try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                var buffer: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 16384)
                while true {
                    let n = chunk.withUnsafeMutableBytes { read(p.standardOutput, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 {
                        let log = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
                        continuation.resume(throwing: TestSupportError("\(name) exited before ready: \(log.suffix(2000))"))
                        return
                    }
                    buffer += chunk[0..<n]
                    while let nl = buffer.firstIndex(of: 10) {
                        let line = String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self)
                        buffer.removeSubrange(buffer.startIndex...nl)
                        if line.hasPrefix("READY ") {
                            let json = Data(line.dropFirst(6).utf8)
                            let fields = (try? JSONDecoder().decode([String: String].self, from: json)) ?? [:]
                            continuation.resume(returning: fields)
                            // keep draining stdout so the child never blocks on a full pipe
                            _ = p.readToEnd(p.standardOutput)
                            return
                        }
                    }
                }
            }
            thread.start()
        }
    }

    /// The process id, while running.
    public var pid: Int32? { lock.withLock { process?.pid } }

    /// Sends SIGTERM and waits for exit, sending SIGKILL after `grace` seconds; returns the
    /// seconds it took (nil if it was not running).
    @discardableResult
    public func stop(grace: Double = 30) -> Double? {
        guard let p = lock.withLock({ process }) else { return nil }
        let t0 = Date()
        p.signal(SIGTERM)
        let escalation = DispatchWorkItem { p.signal(SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + grace, execute: escalation)
        p.waitUntilExit()
        escalation.cancel()
        lock.withLock { process = nil }
        return Date().timeIntervalSince(t0)
    }

    /// Kills with SIGKILL (a crash) and waits for exit.
    public func kill() {
        guard let p = lock.withLock({ process }) else { return }
        p.signal(SIGKILL)
        p.waitUntilExit()
        lock.withLock { process = nil }
    }

    /// Freezes the process (SIGSTOP): it keeps its sockets but runs no code, as a process
    /// stalled by the machine would.
    public func pause() {
        if let pid { Foundation.kill(pid, SIGSTOP) }
    }

    /// Lets a paused process run again (SIGCONT).
    public func resume() {
        if let pid { Foundation.kill(pid, SIGCONT) }
    }

    /// Exit status after `stop()`/`kill()` or a crash.
    public var isRunning: Bool { lock.withLock { process?.isRunning ?? false } }

    deinit { kill() }
}

/// A temporary directory for one test's data and logs.
public func makeTemporaryDirectory(_ prefix: String = "insta-test") -> String {
    let path = NSTemporaryDirectory() + "\(prefix)-\(RandomID.make().prefix(10))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
