import Foundation
import Wire

/// Structured logging in swift-log's shape: one JSON line per event on stderr,
/// `{"ts": "...", "level": "info", "service": "auth", "msg": "request.handled", ...metadata}`.
///
/// Messages are short fixed strings; metadata keys are dot-separated. A logger carries its own
/// metadata (`logger[metadataKey: "request.id"] = id`), so the code that handles one request
/// attaches it once and every line it logs has it. Never log secrets.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable {
        case debug = 0
        case info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var name: String { ["debug", "info", "warning", "error"][rawValue] }

        /// Parses `debug`, `info`, `warning` or `error` (case-insensitive).
        public init?(name: String) {
            switch name.lowercased() {
            case "debug": self = .debug
            case "info": self = .info
            case "warning": self = .warning
            case "error": self = .error
            default: return nil
            }
        }
    }

    public let service: String
    public let minimum: Level
    /// Written on every line this logger writes (a call's own metadata wins on a clash).
    public var metadata: [String: String] = [:]
    /// Serializes whole lines on stderr. A plain `NSLock`, not `Locked(())`: ThreadSanitizer
    /// reported the `inout ()` access of `Locked.withLock` as a race between two loggers (CI,
    /// CurveSecurityTests under TSan), although both held the mutex.
    private static let lock = NSLock()

    /// - Parameter minimum: lowest level written (default: env `LOG_LEVEL`, else `info`).
    public init(service: String, minimum: Level? = nil) {
        self.service = service
        self.minimum = minimum ?? ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Level.init(name:)) ?? .info
    }

    /// One metadata value of this logger.
    public subscript(metadataKey key: String) -> String? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// This logger with `extra` added to its metadata.
    public func with(_ extra: [String: String]) -> Logger {
        var copy = self
        copy.metadata.merge(extra) { $1 }
        return copy
    }

    public func debug(_ message: String, metadata: [String: String] = [:]) { log(.debug, message, metadata) }
    public func info(_ message: String, metadata: [String: String] = [:]) { log(.info, message, metadata) }
    public func warning(_ message: String, metadata: [String: String] = [:]) { log(.warning, message, metadata) }
    public func error(_ message: String, metadata: [String: String] = [:]) { log(.error, message, metadata) }

    public func log(_ level: Level, _ message: String, _ extra: [String: String]) {
        guard level >= minimum else { return }
        var fields = self.metadata
        fields.merge(extra) { $1 }
        fields["ts"] = Timestamp.now()
        fields["level"] = level.name
        fields["service"] = service
        fields["msg"] = message
        guard var line = try? WireJSON.encode(fields) else { return }
        line.append(10)
        Logger.lock.lock()
        defer { Logger.lock.unlock() }
        line.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
    }
}
