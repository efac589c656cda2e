import Foundation
import Synchronization

/// Structured logging in swift-log's shape: one JSON line per event on stderr,
/// `{"ts": "...", "level": "info", "service": "auth", "msg": "request.handled", ...metadata}`.
///
/// Messages are short fixed strings; metadata keys are dot-separated. Never log secrets.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable {
        case debug = 0
        case info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var name: String { ["debug", "info", "warning", "error"][rawValue] }
    }

    public let service: String
    public let minimum: Level
    private static let lock = Locked(())

    /// - Parameter minimum: lowest level written (env `LOG_LEVEL`: debug, info, warning, error).
    public init(service: String, minimum: Level? = nil) {
        self.service = service
        if let minimum {
            self.minimum = minimum
        } else {
            switch ProcessInfo.processInfo.environment["LOG_LEVEL"]?.lowercased() {
            case "debug": self.minimum = .debug
            case "warning": self.minimum = .warning
            case "error": self.minimum = .error
            default: self.minimum = .info
            }
        }
    }

    public func debug(_ message: String, metadata: [String: String] = [:]) { log(.debug, message, metadata) }
    public func info(_ message: String, metadata: [String: String] = [:]) { log(.info, message, metadata) }
    public func warning(_ message: String, metadata: [String: String] = [:]) { log(.warning, message, metadata) }
    public func error(_ message: String, metadata: [String: String] = [:]) { log(.error, message, metadata) }

    public func log(_ level: Level, _ message: String, _ metadata: [String: String]) {
        guard level >= minimum else { return }
        var fields = metadata
        fields["ts"] = Timestamp.now()
        fields["level"] = level.name
        fields["service"] = service
        fields["msg"] = message
        guard var line = try? WireJSON.encode(fields) else { return }
        line.append(10)
        Logger.lock.withLock { _ in
            line.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
        }
    }
}
