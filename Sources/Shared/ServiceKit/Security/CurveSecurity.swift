import CZMQ
import Foundation
import Support
import Synchronization
import Transport
import Wire

/// CURVE encryption and authentication between services (ZeroMQ RFC 26 CurveZMQ, RFC 27 ZAP),
/// on by default in every configuration: a laptop's stack too, since any local process can
/// reach 127.0.0.1 and the services trust the user id a caller sends.
///
/// Every process has a key pair. Servers (ROUTER, PUB, XPUB) accept only clients whose public
/// key is authorised, checked by a ZAP handler on `inproc://zeromq.zap.01`; clients (DEALER,
/// SUB) verify the server's public key. Keys are Z85 text (40 characters), one per file. A
/// client without an authorised key gets no reply (a NULL client cannot even finish the
/// handshake) and is logged once (`curve.client_refused`, `curve.handshake_failed`).
///
/// Environment:
/// - `CURVE_ENABLED` (default true; false: ZMTP NULL, neither encrypted nor authenticated)
/// - `CURVE_SECRET_KEY_FILE` and `CURVE_PUBLIC_KEYS_DIR`: keys handed in as files (deploy/):
///   this process's secret key, and `<name>.pub` for every process; the servers' keys are found
///   there by service name (`auth.pub`, `profile.pub`, `notification.pub`), and every key in it
///   is authorised.
/// - otherwise `CURVE_KEYS_DIR` (default `DATA_DIR/curve`): the stack's keys, made on first
///   start (`ensureKeys`: `<dir>/<name>.key`, mode 0600, and `<dir>/public/<name>.pub`, in a
///   directory of mode 0700) for `stackNames`, so every process given the same `DATA_DIR` finds
///   the others' keys, as deploy/ hands them out with files.
public enum CurveSecurity {
    /// The processes of a stack, a key pair each; the replicas of a service share its pair.
    public static let stackNames = ["auth", "profile", "notification", "gateway"]

    /// A new key pair, Z85-encoded. - Throws: `ZMQError` if libzmq was built without CURVE.
    public static func generateKeyPair() throws -> (publicKey: String, secretKey: String) {
        var pub = [CChar](repeating: 0, count: 41)
        var sec = [CChar](repeating: 0, count: 41)
        if zmq_curve_keypair(&pub, &sec) != 0 { throw ZMQError.current("zmq_curve_keypair") }
        return (z85String(pub), z85String(sec))
    }

    /// The public key for a Z85 secret key. - Throws: `ZMQError` for a malformed key.
    public static func publicKey(forSecret secret: String) throws -> String {
        var pub = [CChar](repeating: 0, count: 41)
        if zmq_curve_public(&pub, secret) != 0 { throw ZMQError.current("zmq_curve_public") }
        return z85String(pub)
    }

    /// A NUL-terminated Z85 buffer as a String.
    static func z85String(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Writes `<dir>/<name>.key` (secret, mode 0600) and `<dir>/<name>.pub`, replacing them.
    /// - Throws: `ZMQError` or a file error.
    public static func writeKeyPair(directory: String, name: String) throws {
        try writeKeyPair(secretPath: "\(directory)/\(name).key", publicPath: "\(directory)/\(name).pub")
    }

    /// Writes a new key pair: the secret key created with mode 0600 (never readable by others,
    /// not even for a moment) and renamed into place, then the public key.
    static func writeKeyPair(secretPath: String, publicPath: String) throws {
        try FileManager.default.createDirectory(
            atPath: (secretPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let (pub, sec) = try generateKeyPair()
        let temporary = "\(secretPath).\(getpid()).tmp"
        guard
            FileManager.default.createFile(
                atPath: temporary, contents: Data((sec + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else { throw ConfigurationError(variable: secretPath, value: "", expected: "a writable key file") }
        guard rename(temporary, secretPath) == 0 else {
            throw ConfigurationError(variable: secretPath, value: "errno \(errno)", expected: "a writable key file")
        }
        try (pub + "\n").write(toFile: publicPath, atomically: true, encoding: .utf8)
    }

    /// Makes sure `directory` (mode 0700) holds a key pair for each of `names`:
    /// `<directory>/<name>.key` (mode 0600) and `<directory>/public/<name>.pub`, generating the
    /// missing ones under an exclusive lock (`<directory>/.lock`), so processes starting together
    /// on one `DATA_DIR` make each pair once.
    /// - Throws: a file error, or `ConfigurationError` when the directory cannot be made private.
    public static func ensureKeys(directory: String, names: [String]) throws {
        let files = FileManager.default
        try files.createDirectory(
            atPath: "\(directory)/public", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard chmod(directory, 0o700) == 0 else {
            throw ConfigurationError(variable: "CURVE_KEYS_DIR", value: directory, expected: "a directory this user owns")
        }
        let lock = open("\(directory)/.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard lock >= 0 else {
            throw ConfigurationError(variable: "CURVE_KEYS_DIR", value: directory, expected: "a writable directory")
        }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 && errno == EINTR {}
        defer { flock(lock, LOCK_UN) }
        for name in names where !files.fileExists(atPath: "\(directory)/\(name).key") {
            try writeKeyPair(secretPath: "\(directory)/\(name).key", publicPath: "\(directory)/public/\(name).pub")
        }
    }

    static func readKey(_ path: String) throws -> String {
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.count == 40 else {
            throw ConfigurationError(variable: path, value: "\(text.count) characters", expected: "a 40-character Z85 key")
        }
        return text
    }

    /// The public keys in `directory`, by name (`<name>.pub`). - Throws: a file error, or
    /// `ConfigurationError` for a malformed key.
    public static func publicKeys(in directory: String) throws -> [String: String] {
        var keys: [String: String] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: directory) where file.hasSuffix(".pub") {
            keys[String(file.dropLast(4))] = try readKey("\(directory)/\(file)")
        }
        return keys
    }

    /// Builds the process's transport security from the environment (see the type's comment),
    /// starting the ZAP handler in `context` when CURVE is on.
    /// - Parameter name: the process's name (`auth`, `gateway`, ...): its key pair's.
    /// - Returns: `.plain` when `CURVE_ENABLED` is false.
    /// - Throws: `ConfigurationError` naming the variable or file that is missing or malformed.
    public static func fromEnvironment(_ env: Environment, name: String, context: ZMQContext, logger: Logger) throws
        -> TransportSecurity
    {
        guard try env.bool("CURVE_ENABLED", default: true) else {
            logger.warning("curve.disabled", metadata: ["setting": "CURVE_ENABLED"])
            return .plain
        }
        let secretFile = env.optionalString("CURVE_SECRET_KEY_FILE")
        let keysDir = env.optionalString("CURVE_PUBLIC_KEYS_DIR")
        switch (secretFile, keysDir) {
        case (let secretFile?, let keysDir?):
            return try security(secretKeyFile: secretFile, publicKeysDirectory: keysDir, context: context, logger: logger)
        case (nil, nil):
            let dataDirectory = try env.dataDirectory()
            let directory = env.optionalString("CURVE_KEYS_DIR") ?? "\(dataDirectory)/curve"
            return try security(keysDirectory: directory, name: name, context: context, logger: logger)
        case (nil, _):
            throw ConfigurationError(variable: "CURVE_SECRET_KEY_FILE", value: "", expected: "a secret key file")
        case (_, nil):
            throw ConfigurationError(
                variable: "CURVE_PUBLIC_KEYS_DIR", value: "", expected: "a directory of <name>.pub files")
        }
    }

    /// The security of process `name` of the stack whose keys are in `directory` (made there
    /// first if missing, with the stack's: `ensureKeys`). Tools that talk to a stack (LoadTest,
    /// the tests' harness) use it with a name of their own; the servers' ZAP handlers find a new
    /// key in `public/` when it first connects.
    /// - Throws: a file error or `ConfigurationError`.
    public static func security(keysDirectory directory: String, name: String, context: ZMQContext, logger: Logger)
        throws -> TransportSecurity
    {
        try ensureKeys(directory: directory, names: stackNames + (stackNames.contains(name) ? [] : [name]))
        return try security(
            secretKeyFile: "\(directory)/\(name).key", publicKeysDirectory: "\(directory)/public", context: context,
            logger: logger)
    }

    /// CURVE with this secret key, authorising every key in `publicKeysDirectory` (read again
    /// when an unknown key knocks) and finding the servers' keys there by service name.
    /// - Throws: `ConfigurationError` naming the file that is missing or malformed.
    public static func security(
        secretKeyFile: String, publicKeysDirectory keysDir: String, context: ZMQContext, logger: Logger
    ) throws -> TransportSecurity {
        let secret = try readKey(secretKeyFile)
        let ownPublic = try publicKey(forSecret: secret)
        let serverKeys = try publicKeys(in: keysDir)
        try ZAPHandler.start(context: context, keysDirectory: keysDir, authorised: Set(serverKeys.values), logger: logger)
        logger.info("curve.enabled", metadata: ["keys.authorised": "\(serverKeys.count)", "keys.directory": keysDir])
        return TransportSecurity(
            configureServer: { socket in
                try socket.set(ZMQ_ZAP_DOMAIN, string: "insta")
                try socket.set(ZMQ_CURVE_SERVER, 1)
                try socket.set(ZMQ_CURVE_SECRETKEY, bytes: Array(secret.utf8) + [0])
                try HandshakeFailures.watch(socket, logger: logger)
            },
            configureClient: { socket, service in
                guard let serverKey = serverKeys[service] else {
                    throw ConfigurationError(
                        variable: "CURVE_PUBLIC_KEYS_DIR", value: keysDir, expected: "a file \(service).pub with the server's key"
                    )
                }
                try socket.set(ZMQ_CURVE_SERVERKEY, bytes: Array(serverKey.utf8) + [0])
                try socket.set(ZMQ_CURVE_PUBLICKEY, bytes: Array(ownPublic.utf8) + [0])
                try socket.set(ZMQ_CURVE_SECRETKEY, bytes: Array(secret.utf8) + [0])
            })
    }
}

/// A ZAP handler (ZeroMQ RFC 27): answers libzmq's authentication requests for CURVE
/// connections, allowing only the authorised client public keys (the keys directory is read
/// again when an unknown key knocks and the directory changed since it was read: a tool's key
/// made after the start; a refused CURVE client does not try again, so the first answer must
/// be right). A refused client is logged once per address. Runs on its own thread.
enum ZAPHandler {
    /// The directory's modification time (a key added or replaced changes it), nil if unreadable.
    static func modified(_ directory: String) -> [Int]? {
        var info = stat()
        guard stat(directory, &info) == 0 else { return nil }
        return [info.st_mtim.tv_sec, info.st_mtim.tv_nsec]
    }

    private static let started = Locked<Set<ObjectIdentifier>>([])

    static func start(context: ZMQContext, keysDirectory: String, authorised: Set<String>, logger: Logger) throws {
        let first = started.withLock { $0.insert(ObjectIdentifier(context)).inserted }
        guard first else { return }
        let rep = try ZMQSocket(context, .rep)
        try rep.bind("inproc://zeromq.zap.01")
        let box = ZAPSocketBox(rep)
        let thread = Thread {
            let socket = box.take()
            var authorised = authorised
            var loaded = Self.modified(keysDirectory)
            var refused = RefusalLog(logger: logger)
            while true {
                guard let request = try? socket.receive() else { break }
                // [version, request id, domain, address, routing id, mechanism, credentials...]
                guard request.count >= 6 else { continue }
                let mechanism = String(decoding: request[5], as: UTF8.self)
                var allowed = false
                var clientKey = ""
                if mechanism == "CURVE", request.count >= 7, request[6].count == 32 {
                    var z85 = [CChar](repeating: 0, count: 41)
                    request[6].withUnsafeBufferPointer { _ = zmq_z85_encode(&z85, $0.baseAddress, 32) }
                    clientKey = CurveSecurity.z85String(z85)
                    allowed = authorised.contains(clientKey)
                    // A key made since the keys were read (a tool's): read them again, but only
                    // when the directory changed (one stat(2) per unknown key otherwise).
                    if !allowed, let changed = Self.modified(keysDirectory), changed != loaded {
                        loaded = changed
                        if let keys = try? CurveSecurity.publicKeys(in: keysDirectory) {
                            authorised.formUnion(keys.values)
                            allowed = authorised.contains(clientKey)
                        }
                    }
                }
                if !allowed {
                    refused.note(
                        "curve.client_refused", address: String(decoding: request[3], as: UTF8.self),
                        detail: mechanism)
                }
                let reply: [[UInt8]] = [
                    Array("1.0".utf8), request[1], Array((allowed ? "200" : "400").utf8),
                    Array((allowed ? "OK" : "client key not authorised").utf8), Array(clientKey.prefix(8).utf8), [],
                ]
                if (try? socket.send(reply)) == nil { break }
            }
            socket.close()
        }
        thread.name = "zap"
        thread.start()
    }
}

/// Logs each refused peer once (by message and address), counting the rest; at most 1,000
/// addresses are remembered, so a flood of addresses cannot grow it without bound.
struct RefusalLog {
    let logger: Logger
    private var seen: [String: Int] = [:]

    init(logger: Logger) { self.logger = logger }

    mutating func note(_ message: String, address: String, detail: String) {
        let key = "\(message) \(address)"
        if let n = seen[key] {
            seen[key] = n + 1
            return
        }
        if seen.count < 1_000 { seen[key] = 1 }
        logger.warning(message, metadata: ["address": address, "detail": detail, "note": "logged once per address"])
    }
}

/// Watches a CURVE server socket's handshakes (a socket monitor read on a thread of its own)
/// and logs the failures once per kind: a client without keys (ZMTP NULL) fails the handshake
/// before any ZAP request, so only the monitor sees it.
enum HandshakeFailures {
    static let events =
        ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
        | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL

    /// Starts watching `socket` (call on its owner's thread, before it binds).
    /// - Throws: `ZMQError` when the monitor cannot be set up.
    static func watch(_ socket: ZMQSocket, logger: Logger) throws {
        let endpoint = "inproc://curve-handshakes-\(RandomID.unique())"
        try socket.monitor(endpoint, events: events)
        let monitor = try ZMQSocket(socket.context, .pair)
        try monitor.connect(endpoint)
        let box = ZAPSocketBox(monitor)
        let thread = Thread {
            let monitor = box.take()
            var refused = RefusalLog(logger: logger)
            while let event = try? monitor.receive(), event.count >= 2, event[0].count >= 6 {
                let code = Int32(event[0][0]) | (Int32(event[0][1]) << 8)
                let value = event[0][2..<6].enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * $1.offset) }
                let kind =
                    switch code {
                    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: "authentication refused"
                    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: "protocol error 0x\(String(value, radix: 16))"
                    default: "no detail"
                    }
                refused.note("curve.handshake_failed", address: String(decoding: event[1], as: UTF8.self), detail: kind)
            }
            monitor.close()
        }
        thread.name = "curve-monitor"
        thread.start()
    }
}

private final class ZAPSocketBox: @unchecked Sendable {
    // @unchecked: written before the thread starts, taken once by it, never shared.
    private var socket: ZMQSocket?
    init(_ socket: ZMQSocket) { self.socket = socket }
    func take() -> ZMQSocket {
        defer { socket = nil }
        return socket!
    }
}
