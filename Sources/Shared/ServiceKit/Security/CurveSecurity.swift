import CZMQ
import Foundation
import Support
import Synchronization
import Transport

/// CURVE encryption and authentication between services (ZeroMQ RFC 26 CurveZMQ, RFC 27 ZAP).
///
/// Every process has a key pair. Servers (ROUTER, PUB) accept only clients whose public key is
/// authorised, checked by a ZAP handler on `inproc://zeromq.zap.01`; clients (DEALER, SUB) verify
/// the server's public key. Keys are Z85 text (40 characters), one per file.
///
/// Environment:
/// - `CURVE_ENABLED` (default false)
/// - `CURVE_SECRET_KEY_FILE`: this process's secret key
/// - `CURVE_PUBLIC_KEYS_DIR`: `<name>.pub` for every process; the servers' keys are found here by
///   service name (`auth.pub`, `profile.pub`, `notification.pub`), and every key in it is authorised.
public enum CurveSecurity {
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

    /// Writes `<dir>/<name>.key` (secret, mode 0600) and `<dir>/<name>.pub`.
    /// - Throws: `ZMQError` or a file error.
    public static func writeKeyPair(directory: String, name: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let (pub, sec) = try generateKeyPair()
        let keyPath = "\(directory)/\(name).key"
        _ = FileManager.default.createFile(
            atPath: keyPath, contents: Data((sec + "\n").utf8), attributes: [.posixPermissions: 0o600])
        try (pub + "\n").write(toFile: "\(directory)/\(name).pub", atomically: true, encoding: .utf8)
    }

    static func readKey(_ path: String) throws -> String {
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.count == 40 else {
            throw ConfigurationError(variable: path, value: "\(text.count) characters", expected: "a 40-character Z85 key")
        }
        return text
    }

    /// Builds the process's transport security from the environment, starting the ZAP handler
    /// in `context` when CURVE is on. Returns `.plain` when `CURVE_ENABLED` is false.
    /// - Throws: `ConfigurationError` naming the variable or file that is missing or malformed.
    public static func fromEnvironment(_ env: Environment, context: ZMQContext, logger: Logger) throws -> TransportSecurity {
        guard try env.bool("CURVE_ENABLED", default: false) else { return .plain }
        guard let secretFile = env.optionalString("CURVE_SECRET_KEY_FILE") else {
            throw ConfigurationError(variable: "CURVE_SECRET_KEY_FILE", value: "", expected: "a secret key file")
        }
        guard let keysDir = env.optionalString("CURVE_PUBLIC_KEYS_DIR") else {
            throw ConfigurationError(variable: "CURVE_PUBLIC_KEYS_DIR", value: "", expected: "a directory of <name>.pub files")
        }
        let secret = try readKey(secretFile)
        let ownPublic = try publicKey(forSecret: secret)
        var publicKeys: [String: String] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: keysDir) where file.hasSuffix(".pub") {
            publicKeys[String(file.dropLast(4))] = try readKey("\(keysDir)/\(file)")
        }
        let serverKeys = publicKeys
        let authorised = Set(publicKeys.values)
        try ZAPHandler.start(context: context, authorised: authorised, logger: logger)
        logger.info("curve.enabled", metadata: ["keys.authorised": "\(authorised.count)"])
        return TransportSecurity(
            configureServer: { socket in
                try socket.set(ZMQ_ZAP_DOMAIN, string: "insta")
                try socket.set(ZMQ_CURVE_SERVER, 1)
                try socket.set(ZMQ_CURVE_SECRETKEY, bytes: Array(secret.utf8) + [0])
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
/// connections, allowing only the authorised client public keys. Runs on its own thread.
enum ZAPHandler {
    private static let started = Locked<Set<ObjectIdentifier>>([])

    static func start(context: ZMQContext, authorised: Set<String>, logger: Logger) throws {
        let first = started.withLock { $0.insert(ObjectIdentifier(context)).inserted }
        guard first else { return }
        let rep = try ZMQSocket(context, .rep)
        try rep.bind("inproc://zeromq.zap.01")
        let box = ZAPSocketBox(rep)
        let thread = Thread {
            let socket = box.take()
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
                }
                if !allowed {
                    logger.warning(
                        "curve.client_refused",
                        metadata: ["mechanism": mechanism, "address": String(decoding: request[3], as: UTF8.self)])
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

private final class ZAPSocketBox: @unchecked Sendable {
    // @unchecked: written before the thread starts, taken once by it, never shared.
    private var socket: ZMQSocket?
    init(_ socket: ZMQSocket) { self.socket = socket }
    func take() -> ZMQSocket {
        defer { socket = nil }
        return socket!
    }
}
