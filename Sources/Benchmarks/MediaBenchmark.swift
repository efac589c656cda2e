import Foundation
import Harness
import Media
import Support

/// `scripts/bench media [--jpegs N] [--heics N] [--runs N]`: the media library in-process, beside the
/// `vips thumbnail` command-line tool (Debian `libvips-tools`) on the same files in the same run.
///
/// Makes `--jpegs` (12) 3-megapixel JPEGs (2048 × 1536, quality 90) and `--heics` (3) 12-megapixel HEICs
/// (4032 × 3024, the iPhone's size, libheif/x265 at quality 50) at run time: synthetic photo-like pixels
/// (gradients, shapes, fine texture and sensor-like noise) written as PPM by this process and encoded by
/// the `vips` tool. Then, for each set, `--runs` (2) passes of:
/// - `MediaProcessor.process`: sniff, header check, full decode, sRGB, autorot, and four JPEG variants
///   (`original` at full size, `1080`, `640`, `square320`), one file after another on this thread
///   (libvips uses its own worker threads inside each file);
/// - the same plus `FileMediaStore.put` into a scratch directory (five files written with fsync);
/// - `vips thumbnail FILE OUT.jpg[Q=80,strip] 320 --height 320 --crop centre`, one process per file, one
///   after another: what a thumbnail costs with libvips's shrink-on-load (it decodes JPEGs at 1/8 size).
/// Prints files/s and MB/s (input bytes, 1 MB = 10^6 bytes), the ratio of the library to the CLI (how many
/// times the CLI's throughput the library reaches), the library's peak RSS (this process) and the CLI's
/// largest peak RSS (per process, from `wait4`).
///
/// Then the same files as uploads through the real services (`POST /v1/media` on a gateway in front of
/// ProfileService, both started by this process on ephemeral ports with a scratch `DATA_DIR`),
/// `--clients` (2) uploads at a time: uploads/s and MB/s, the ratio to the CLI, and the gateway's and
/// ProfileService's peak RSS (`VmHWM` from /proc, each process's own).
enum MediaBenchmark {
    struct Sample {
        let name: String
        let bytes: [UInt8]
        let path: String
    }

    struct Figures {
        var files = 0
        var bytes = 0
        var seconds = 0.0
        var filesPerSecond: Double { Double(files) / seconds }
        var megabytesPerSecond: Double { Double(bytes) / 1_000_000 / seconds }
    }

    static func run(_ options: [String]) async throws {
        func option(_ name: String, _ fallback: Int) -> Int {
            guard let i = options.firstIndex(of: name), i + 1 < options.count, let v = Int(options[i + 1]) else {
                return fallback
            }
            return v
        }
        let jpegCount = max(1, option("--jpegs", 12))
        let heicCount = max(1, option("--heics", 3))
        let runs = max(1, option("--runs", 2))
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/vips") else {
            print("media benchmark: /usr/bin/vips is missing (Debian libvips-tools; scripts/install-deps installs it)")
            return
        }
        let scratch = NSTemporaryDirectory() + "media-bench-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }

        print("media benchmark: making \(jpegCount) JPEGs of 2048×1536 and \(heicCount) HEICs of 4032×3024 …")
        let jpegs = try (0..<jpegCount).map {
            try make(width: 2048, height: 1536, seed: UInt64($0), output: "\(scratch)/photo\($0).jpg[Q=90]", scratch: scratch)
        }
        let heics = try (0..<heicCount).map {
            try make(
                width: 4032, height: 3024, seed: UInt64(100 + $0), output: "\(scratch)/photo\($0).heic[Q=50]", scratch: scratch)
        }
        func average(_ samples: [Sample]) -> String {
            String(format: "%.2f MB", Double(samples.reduce(0) { $0 + $1.bytes.count }) / Double(samples.count) / 1_000_000)
        }
        print(
            "  \(jpegCount) JPEG 3.1 MP (average \(average(jpegs))), \(heicCount) HEIC 12.2 MP (average \(average(heics)));"
                + " \(runs) runs each; \(ProcessInfo.processInfo.activeProcessorCount) CPUs")

        let floorMB = peakRSSMB()
        var cliPeakKB: [String: Int] = [:]
        var cli: [String: Figures] = [:]
        let sets = [("JPEG 3 MP", jpegs), ("HEIC 12 MP", heics)]
        for (label, samples) in sets {
            for run in 0..<runs {
                try cli[label, default: Figures()].add(samples) { sample in
                    let status = try spawn(thumbnailCommand(sample, output: "\(scratch)/thumb-\(run)-\(sample.name).jpg"))
                    guard status == 0 else { throw BenchmarkFailure(description: "vips thumbnail exited \(status)") }
                }
            }
            // Peak RSS, untimed: Linux starts a spawned program's `ru_maxrss` at its parent's, so the CLI is
            // started by a small python3 that reports its child's figure alone (RUSAGE_CHILDREN, KiB).
            for sample in samples {
                cliPeakKB[label] = max(
                    cliPeakKB[label] ?? 0,
                    try childPeakKB(thumbnailCommand(sample, output: "\(scratch)/thumb-rss.jpg"), scratch: scratch))
            }
        }

        let processor = try MediaProcessor()
        _ = try processor.process(jpegs[0].bytes)  // warm-up: libvips start, code paths paged in
        let store = try FileMediaStore(root: "\(scratch)/store")
        func line(_ name: String, _ f: Figures) -> String {
            name.padding(toLength: 40, withPad: " ", startingAt: 0)
                + String(format: "%7.2f files/s %8.2f MB/s", f.filesPerSecond, f.megabytesPerSecond)
        }
        for (label, samples) in sets {
            var library = Figures()
            var stored = Figures()
            for _ in 0..<runs {
                try library.add(samples) { sample in _ = try processor.process(sample.bytes) }
                try stored.add(samples) { sample in try store.put(try processor.process(sample.bytes)) }
            }
            let command = cli[label]!
            print("\(label):")
            print(line("  library: process (4 JPEG variants)", library))
            print(line("  library: process + store (fsync)", stored))
            print(line("  vips thumbnail CLI (one 320×320)", command))
            print(
                String(
                    format: "  ratio library/CLI: %.2f (process), %.2f (process + store)",
                    library.filesPerSecond / command.filesPerSecond, stored.filesPerSecond / command.filesPerSecond))
            print(
                String(
                    format: "  peak RSS: library (this process, so far) %.0f MB; vips CLI (largest process) %.0f MB",
                    peakRSSMB(), Double(cliPeakKB[label] ?? 0) / 1024))
        }
        print(String(format: "(this process held %.0f MB before processing: its libraries and the samples in memory)", floorMB))
        try await uploads(sets, runs: runs, clients: max(1, option("--clients", 2)), cli: cli, scratch: scratch)
    }

    /// The samples uploaded through the gateway, `clients` at a time, `runs` times (a repeated upload is
    /// processed again; only its files are reused).
    static func uploads(
        _ sets: [(String, [Sample])], runs: Int, clients: Int, cli: [String: Figures], scratch: String
    ) async throws {
        let cluster = Cluster(dataDirectory: "\(scratch)/services", extraEnvironment: ["LOG_LEVEL": "warning"])
        try FileManager.default.createDirectory(atPath: cluster.dataDirectory, withIntermediateDirectories: true)
        try await cluster.start(["auth", "profile", "notification", "gateway"])
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let register = try http.request(
            "POST", "/v1/auth/register",
            json: ["email": "bench@example.com", "username": "bench", "password": "correct-horse-9"])
        guard register.status == 201, let token = register.object["token"] as? String else {
            throw BenchmarkFailure(description: "register failed: \(register.status) \(register.text.prefix(200))")
        }
        func upload(_ sample: Sample) throws {
            let type = sample.path.hasSuffix(".heic") ? "image/heic" : "image/jpeg"
            let r = try http.request(
                "POST", "/v1/media", token: token, raw: sample.bytes, headers: ["Content-Type": type], timeoutSeconds: 120)
            guard r.status == 201 else { throw BenchmarkFailure(description: "upload: \(r.status) \(r.text.prefix(200))") }
        }
        try upload(sets[0].1[0])  // warm-up
        print("through the gateway (POST /v1/media, \(clients) at a time, debug or release as built):")
        for (label, samples) in sets {
            let all = (0..<runs).flatMap { _ in samples }
            let start = DispatchTime.now().uptimeNanoseconds
            try await withThrowingTaskGroup(of: Void.self) { group in
                let next = Locked(0)
                for _ in 0..<clients {
                    group.addTask {
                        while true {
                            let i = next.withLock { n -> Int in
                                defer { n += 1 }
                                return n
                            }
                            guard i < all.count else { return }
                            try upload(all[i])
                        }
                    }
                }
                try await group.waitForAll()
            }
            let f = Figures(
                files: all.count, bytes: all.reduce(0) { $0 + $1.bytes.count },
                seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            print(
                "  \(label):".padding(toLength: 40, withPad: " ", startingAt: 0)
                    + String(format: "%7.2f uploads/s %8.2f MB/s", f.filesPerSecond, f.megabytesPerSecond)
                    + String(format: "  ratio to the CLI %.2f", f.filesPerSecond / (cli[label]?.filesPerSecond ?? .nan)))
        }
        func peakMB(_ service: String) -> Double {
            guard let pid = cluster.processes[service]?.pid,
                let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                let kb = Double(line.split(separator: " ").dropFirst().first ?? "")
            else { return .nan }
            return kb / 1024
        }
        print(String(format: "  peak RSS: gateway %.0f MB, ProfileService %.0f MB", peakMB("gateway"), peakMB("profile")))
    }

    // MARK: Inputs

    /// Writes synthetic photo-like pixels as a binary PPM (row by row, so this process never holds the
    /// picture) and has the `vips` tool encode it to `output` (a path with libvips save options).
    static func make(width: Int, height: Int, seed: UInt64, output: String, scratch: String) throws -> Sample {
        let ppm = "\(scratch)/source.ppm"
        guard FileManager.default.createFile(atPath: ppm, contents: nil) else {
            throw BenchmarkFailure(description: "cannot create \(ppm)")
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: ppm))
        try handle.write(contentsOf: Data("P6\n\(width) \(height)\n255\n".utf8))
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var row = [UInt8](repeating: 0, count: width * 3)
        let (cx, cy, radius) = (Double(width) * 0.6, Double(height) * 0.45, Double(min(width, height)) * 0.3)
        for y in 0..<height {
            for x in 0..<width {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let noise = Double(Int(state >> 60) - 8)  // -8...7: sensor-like grain
                let dx = Double(x) - cx
                let dy = Double(y) - cy
                let inDisc = dx * dx + dy * dy < radius * radius
                let texture = 12 * sin(Double(x) * 0.21 + Double(seed)) * cos(Double(y) * 0.17)
                let sky = Double(y) / Double(height)
                let r = inDisc ? 200 + texture : 90 + 100 * sky + texture
                let g = inDisc ? 120 + texture : 140 - 40 * sky + texture
                let b = inDisc ? 60 + texture : 210 - 120 * sky + texture
                row[x * 3] = UInt8(clamping: Int(r + noise))
                row[x * 3 + 1] = UInt8(clamping: Int(g + noise))
                row[x * 3 + 2] = UInt8(clamping: Int(b + noise))
            }
            try handle.write(contentsOf: row)
        }
        try handle.close()
        let status = try spawn(["/usr/bin/vips", "copy", ppm, output])
        guard status == 0 else { throw BenchmarkFailure(description: "vips copy to \(output) exited \(status)") }
        let path = String(output.prefix { $0 != "[" })
        let name = URL(fileURLWithPath: path).lastPathComponent
        return Sample(name: name, bytes: Array(try Data(contentsOf: URL(fileURLWithPath: path))), path: path)
    }

    // MARK: Processes and memory

    /// `vips thumbnail FILE OUT[Q=80,strip] 320 --height 320 --crop centre`.
    static func thumbnailCommand(_ sample: Sample, output: String) -> [String] {
        ["/usr/bin/vips", "thumbnail", sample.path, "\(output)[Q=80,strip]", "320", "--height", "320", "--crop", "centre"]
    }

    /// Runs a program to completion with `posix_spawn` and `waitpid`; returns its exit status.
    static func spawn(_ arguments: [String]) throws -> Int32 {
        var argv = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], nil, nil, argv, environ)
        guard spawned == 0 else { throw BenchmarkFailure(description: "posix_spawn \(arguments[0]): errno \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw BenchmarkFailure(description: "waitpid: errno \(errno)") }
        }
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    /// The peak RSS in KiB of `arguments` run by a python3 that reports its child's `ru_maxrss`.
    static func childPeakKB(_ arguments: [String], scratch: String) throws -> Int {
        let report = "\(scratch)/rss.txt"
        let script =
            "import resource, subprocess, sys; subprocess.run(sys.argv[2:], check=True); "
            + "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))"
        guard try spawn(["/usr/bin/python3", "-c", script, report] + arguments) == 0 else {
            throw BenchmarkFailure(description: "python3 \(arguments.joined(separator: " ")) failed")
        }
        return Int(try String(contentsOfFile: report, encoding: .utf8)) ?? 0
    }

    static func peakRSSMB() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_maxrss) / 1024
    }
}

extension MediaBenchmark.Figures {
    /// Times `body` over every sample and adds the counts.
    fileprivate mutating func add(_ samples: [MediaBenchmark.Sample], _ body: (MediaBenchmark.Sample) throws -> Void) rethrows {
        let start = ContinuousClock.now
        for sample in samples { try body(sample) }
        let elapsed = ContinuousClock.now - start
        seconds += Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        files += samples.count
        bytes += samples.reduce(0) { $0 + $1.bytes.count }
    }
}

private struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
}
