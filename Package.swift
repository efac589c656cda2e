// swift-tools-version:6.0
import PackageDescription

/// The Instagram-style backend: four services that talk over ZeroMQ with Codable JSON.
///
/// C libraries come from Debian as system-library targets (see `scripts/install-deps`).
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
        .target(name: "Shared", dependencies: ["CZMQ", "CSQLite", "CResolv", "CSpawn", "CLibPQ"]),
        // The APNs provider client (HTTP/2 over libcurl, token auth) behind the PushTransport protocol.
        .target(name: "APNs", dependencies: ["CCurl", "COpenSSL"]),
        .target(name: "Media", dependencies: ["CVips", "CFFmpeg", "CSodium"]),
        .executableTarget(name: "AuthService", dependencies: ["Shared", "CSodium"]),
        .executableTarget(name: "NotificationService", dependencies: ["Shared", "APNs"]),
        .executableTarget(name: "ProfileService", dependencies: ["Shared", "Media", "CSodium"]),
        .executableTarget(name: "Gateway", dependencies: ["Shared", "CHTTPParser"], plugins: ["EmbedOpenAPI"]),
        .executableTarget(name: "EmbedResource"),
        .plugin(name: "EmbedOpenAPI", capability: .buildTool(), dependencies: ["EmbedResource"]),
        .executableTarget(name: "Benchmarks", dependencies: ["Shared", "TestSupport", "Media"]),
        .executableTarget(name: "LoadTest", dependencies: ["Shared", "TestSupport", "CZMQ", "CCurl", "CSodium"]),
        .target(name: "TestSupport", dependencies: ["Shared"], path: "Tests/TestSupport"),
        .testTarget(name: "SharedTests", dependencies: ["Shared", "TestSupport"]),
        .testTarget(name: "AuthServiceTests", dependencies: ["AuthService", "Shared", "TestSupport"]),
        .testTarget(name: "NotificationServiceTests", dependencies: ["NotificationService", "Shared", "TestSupport", "APNs"]),
        .testTarget(name: "ProfileServiceTests", dependencies: ["ProfileService", "Shared", "TestSupport"]),
        .testTarget(name: "GatewayTests", dependencies: ["Gateway", "Shared", "TestSupport"]),
        .testTarget(name: "MediaTests", dependencies: ["Media", "CVips", "TestSupport"]),
        .testTarget(name: "APNsTests", dependencies: ["APNs", "COpenSSL", "Shared", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
