// swift-tools-version:6.0
import PackageDescription

/// The Instagram-style backend: four services that talk over ZeroMQ with Codable JSON.
///
/// C libraries come from Debian as system-library targets (see `scripts/install-deps`).
/// What a back-end service (one with a database) is built on.
let backend: [Target.Dependency] = ["Wire", "Support", "Messages", "Transport", "ServiceKit", "Storage", "BackendKit"]

let package = Package(
    name: "InstaBackend",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "AuthService", targets: ["AuthService"]),
        .executable(name: "NotificationService", targets: ["NotificationService"]),
        .executable(name: "ProfileService", targets: ["ProfileService"]),
        .executable(name: "Gateway", targets: ["Gateway"]),
        .executable(name: "LoadTest", targets: ["LoadTest"]),
    ],
    targets: [
        .systemLibrary(name: "CZMQ", providers: [.apt(["libzmq3-dev"])]),
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CSodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CHTTPParser", providers: [.apt(["libhttp-parser-dev"])]),
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // libvips's headers include glib's, outside the default include path. pkg-config finds them through
        // glib-2.0 (clean flags); vips.pc would add `-pthread` (from OpenEXR), which SwiftPM refuses with a warning.
        .systemLibrary(name: "CVips", pkgConfig: "glib-2.0", providers: [.apt(["libvips-dev"])]),
        .systemLibrary(
            name: "CFFmpeg",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswscale-dev", "libavutil-dev"])]),
        // glibc's resolver state (resolv.h): HostLookup caps its DNS waits per thread.
        .systemLibrary(name: "CResolv", providers: [.apt(["libc6-dev"])]),
        // glibc's posix_spawn_file_actions_addclosefrom_np and pipe2 (GNU extensions): ChildProcess.
        .systemLibrary(name: "CSpawn", providers: [.apt(["libc6-dev"])]),
        // libpq (Debian's libpq-dev, PostgreSQL 15): the second storage engine.
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // OpenSSL's libcrypto (Debian's libssl-dev): ES256 provider tokens for APNs.
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // `Sources/Shared` is split into targets whose dependency arrows are the architecture
        // (README "Layout"): the Gateway links no storage target, so neither libpq nor SQLite.
        .target(name: "Wire", path: "Sources/Shared/Wire"),
        .target(name: "Support", dependencies: ["Wire", "CSpawn"], path: "Sources/Shared/Support"),
        .target(name: "Messages", dependencies: ["Wire", "Support"], path: "Sources/Shared/Messages"),
        .target(name: "Transport", dependencies: ["Wire", "Support", "CZMQ", "CResolv"], path: "Sources/Shared/Transport"),
        .target(
            name: "ServiceKit", dependencies: ["Wire", "Support", "Messages", "Transport"],
            path: "Sources/Shared/ServiceKit"),
        .target(
            name: "Storage", dependencies: ["Wire", "Support", "Messages", "CSQLite", "CLibPQ", "CSodium"],
            path: "Sources/Shared/Storage"),
        .target(
            name: "BackendKit", dependencies: ["Wire", "Support", "Messages", "Transport", "ServiceKit", "Storage"],
            path: "Sources/Shared/BackendKit"),
        // The APNs provider client (HTTP/2 over libcurl, token auth) behind the PushTransport protocol.
        .target(name: "APNs", dependencies: ["CCurl", "COpenSSL"]),
        .target(name: "Media", dependencies: ["CVips", "CFFmpeg", "CSodium"]),
        .executableTarget(name: "AuthService", dependencies: backend + ["CSodium"]),
        .executableTarget(name: "NotificationService", dependencies: backend + ["APNs"]),
        .executableTarget(name: "ProfileService", dependencies: backend + ["Media", "CSodium"]),
        .executableTarget(
            name: "Gateway", dependencies: ["Wire", "Support", "Messages", "Transport", "ServiceKit", "CHTTPParser"],
            plugins: ["EmbedOpenAPI"]),
        .executableTarget(name: "EmbedResource"),
        .plugin(name: "EmbedOpenAPI", capability: .buildTool(), dependencies: ["EmbedResource"]),
        // The real executables as processes, a PostgreSQL server of its own, fake event producers:
        // what the tests, the benchmarks and the load test share.
        .target(name: "Harness", dependencies: backend),
        .executableTarget(name: "Benchmarks", dependencies: backend + ["Harness", "Media", "CSodium"]),
        .executableTarget(name: "LoadTest", dependencies: backend + ["Harness", "CZMQ", "CCurl", "CSodium"]),
        .target(name: "TestSupport", dependencies: backend + ["Harness"], path: "Tests/TestSupport"),
        .testTarget(name: "SharedTests", dependencies: backend + ["Harness", "TestSupport"]),
        .testTarget(name: "AuthServiceTests", dependencies: backend + ["AuthService", "Harness", "TestSupport"]),
        .testTarget(
            name: "NotificationServiceTests", dependencies: backend + ["NotificationService", "Harness", "TestSupport", "APNs"]),
        .testTarget(name: "ProfileServiceTests", dependencies: backend + ["ProfileService", "Harness", "TestSupport"]),
        .testTarget(name: "GatewayTests", dependencies: backend + ["Gateway", "Harness", "TestSupport"]),
        .testTarget(name: "MediaTests", dependencies: ["Media", "CVips", "Harness", "TestSupport"]),
        .testTarget(name: "APNsTests", dependencies: backend + ["APNs", "COpenSSL", "Harness", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
