import Foundation
import Support

extension Cluster {
    /// Runs an operator command of a service's executable to its end (e.g. `AuthService moderator
    /// grant alice`) with the environment the cluster gives that service (its `DATA_DIR`, its
    /// `<PREFIX>_DATABASE_URL`), as an operator runs it beside the service on its machine.
    /// - Parameter service: `auth`, `profile` or `notification`.
    /// - Returns: its exit status (-1 when killed by a signal) and what it printed on stdout.
    /// - Throws: `ChildProcess.SpawnError`, `TestSupportError` when the PostgreSQL test server
    ///   cannot start.
    public func command(_ service: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        guard let name = Self.executables[Self.base(service)] else { throw TestSupportError("no service \(service)") }
        let (termination, bytes) = try ChildProcess.output(
            "\(ServiceProcess.productsDirectory)/\(name)", arguments, environment: try environment(for: service))
        let status: Int32 =
            switch termination {
            case .exited(let code): code
            default: -1
            }
        return (status, String(decoding: bytes, as: UTF8.self))
    }
}
