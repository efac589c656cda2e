import Shared

/// `Benchmarks <name> [options]`: starts the real services and prints figures.
/// Run with `scripts/bench <name>` (release build).
let arguments = Array(CommandLine.arguments.dropFirst())
let name = arguments.first ?? ""
let options = Array(arguments.dropFirst())
switch name {
// Each benchmark adds its case here.
case "notification": try await NotificationBenchmark.run(options)
default:
    print("usage: Benchmarks <auth|notification|profile|gateway> [options]")
}
