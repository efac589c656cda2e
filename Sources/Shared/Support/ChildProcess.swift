import CSpawn
import Glibc

/// A child process started with `posix_spawn(3)`, for tests, LoadTest and Benchmarks.
///
/// Foundation's `Process` is not used: on Linux its `run()` lists `/proc/self/fd` with a
/// `readdir` loop that copies each entry's whole 256-byte `d_name` (swift-corelibs-foundation
/// `findMaximumOpenFromProcSelfFD`, fixed upstream after Swift 6.3), an over-read that crashes
/// with SIGSEGV when an entry sits at the end of a mapped page. A test process holding a
/// thousand sockets hit it (CI, `HTTPFramingTests`). Here the child closes every descriptor
/// above 2 itself (`posix_spawn_file_actions_addclosefrom_np`, glibc 2.34), so nothing is listed.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `state` is only touched under `lock`; `pid` is immutable.

    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// The parent's own descriptor, inherited.
        case inherit
        /// `/dev/null`.
        case null
        /// A pipe whose parent end is `standardInput` (write), `standardOutput` or
        /// `standardError` (read).
        case pipe
        /// A file, created when missing, appended to.
        case file(String)
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        /// `exit(status)`.
        case exited(Int32)
        /// Killed by a signal (its number).
        case signalled(Int32)

        public var description: String {
            switch self {
            case .exited(let status): "exit status \(status)"
            case .signalled(let signal): "signal \(signal)"
            }
        }
    }

    /// Why a child could not be started.
    public struct SpawnError: Error, CustomStringConvertible {
        public var executable: String
        /// The `errno` value `posix_spawn` (or `pipe`) reported.
        public var code: Int32
        public var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
    }

    /// The child's process id.
    public let pid: pid_t
    /// The parent's (writing) end of the stdin pipe (`.pipe`), or -1. Owned by this object:
    /// closed on `deinit`, and the child then reads end of file; a child that waits for that
    /// end of file learns that its parent is gone, however the parent ended.
    public let standardInput: Int32
    /// The parent's end of the stdout pipe (`.pipe`), or -1. Owned by this object: closed on
    /// `deinit`.
    public let standardOutput: Int32
    /// The parent's end of the stderr pipe (`.pipe`), or -1.
    public let standardError: Int32
    private let lock = Locked<Termination?>(nil)

    /// Starts `executable` (an absolute path, not searched in `PATH`).
    /// - Parameters:
    ///   - arguments: the arguments after `argv[0]` (which is `executable`).
    ///   - environment: the child's whole environment (nil: the parent's).
    /// - Throws: `SpawnError` when the process cannot be started (missing executable, no memory).
    public init(
        _ executable: String, _ arguments: [String] = [], environment: [String: String]? = nil,
        stdin: Stream = .null, stdout: Stream = .inherit, stderr: Stream = .inherit
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var parentEnds: [Int32] = [-1, -1, -1]
        var childEnds: [Int32] = []
        defer { for fd in childEnds { close(fd) } }
        for (target, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .inherit: break
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            case .pipe:
                var fds: [Int32] = [-1, -1]
                guard pipe2(&fds, O_CLOEXEC) == 0 else {
                    let code = errno
                    for fd in parentEnds where fd >= 0 { close(fd) }
                    throw SpawnError(executable: executable, code: code)
                }
                let (parentEnd, childEnd) = target == 0 ? (fds[1], fds[0]) : (fds[0], fds[1])
                parentEnds[Int(target)] = parentEnd
                childEnds.append(childEnd)
                posix_spawn_file_actions_adddup2(&actions, childEnd, target)
            }
        }
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child starts with no signal blocked and every signal at its default action (the
        // parent ignores SIGPIPE; a service must not inherit that).
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var envp: [UnsafeMutablePointer<CChar>?]
        if let environment {
            envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        } else {
            envp = []
            var p = environ
            while let entry = p.pointee {
                envp.append(strdup(entry))
                p += 1
            }
            envp.append(nil)
        }
        defer { for p in envp { free(p) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard rc == 0 else {
            for fd in parentEnds where fd >= 0 { close(fd) }
            throw SpawnError(executable: executable, code: rc)
        }
        pid = child
        standardInput = parentEnds[0]
        standardOutput = parentEnds[1]
        standardError = parentEnds[2]
    }

    /// Runs `executable` to its end and returns its standard output.
    /// - Throws: `SpawnError`.
    public static func output(
        _ executable: String, _ arguments: [String] = [], environment: [String: String]? = nil,
        stderr: Stream = .null
    ) throws -> (termination: Termination, output: [UInt8]) {
        let child = try ChildProcess(executable, arguments, environment: environment, stdout: .pipe, stderr: stderr)
        let bytes = child.readToEnd(child.standardOutput)
        return (child.waitUntilExit(), bytes)
    }

    /// Reads `fd` (one of this child's pipes) until end of file.
    public func readToEnd(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                bytes += buffer[0..<n]
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return bytes
            }
        }
    }

    /// How the child ended, nil while it runs (never blocks; reaps it when it has ended).
    public var termination: Termination? {
        if let ended = lock.withLock({ $0 }) { return ended }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid { return record(status) }
        return lock.withLock { $0 }
    }

    /// Whether the child still runs.
    public var isRunning: Bool { termination == nil }

    /// Waits for the child to end and returns how it ended.
    @discardableResult
    public func waitUntilExit() -> Termination {
        while true {
            if let ended = lock.withLock({ $0 }) { return ended }
            var status: Int32 = 0
            let r = waitpid(pid, &status, 0)
            if r == pid { return record(status) }
            if r < 0 && errno == EINTR { continue }
            // ECHILD: another thread reaped it and is recording the status.
            if let ended = lock.withLock({ $0 }) { return ended }
            sched_yield()
        }
    }

    /// Sends `signal` to the child, unless it has been reaped (its pid could be reused).
    public func signal(_ signal: Int32) {
        if termination == nil { kill(pid, signal) }
    }

    private func record(_ status: Int32) -> Termination {
        let signalled = status & 0x7f
        let ended: Termination = signalled == 0 ? .exited((status >> 8) & 0xff) : .signalled(signalled)
        lock.withLock { if $0 == nil { $0 = ended } }
        return lock.withLock { $0! }
    }

    deinit {
        if standardInput >= 0 { close(standardInput) }
        if standardOutput >= 0 { close(standardOutput) }
        if standardError >= 0 { close(standardError) }
    }
}
