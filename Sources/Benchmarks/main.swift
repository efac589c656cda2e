import Foundation

/// `Benchmarks <name> [options]`: starts the real services and prints figures.
/// Run with `scripts/bench <name>` (release build).
let arguments = Array(CommandLine.arguments.dropFirst())
let name = arguments.first ?? ""
let options = Array(arguments.dropFirst())
do {
    switch name {
    case "auth": try await AuthBenchmark.run(options)
    case "profile": try await ProfileBenchmark.run(options)
    case "gateway": try await GatewayBenchmark.run(options)
    case "notification": try await NotificationBenchmark.run(options)
    case "erasure": try await ErasureBenchmark.run(options)
    case "deletion": try await DeletionBenchmark.run(options)
    case "media": try await MediaBenchmark.run(options)
    case "json": try JSONBenchmark.run(options)
    default:
        print("usage: Benchmarks <auth|notification|erasure|deletion|profile|gateway|media|json> [options]")
    }
} catch {
    // One line, not a backtrace: a missing tool says which package to install.
    FileHandle.standardError.write(Data("Benchmarks \(name): \(error)\n".utf8))
    exit(1)
}
