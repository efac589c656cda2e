import Foundation
import Storage
import Support
import Wire

/// The storage engine the tests run on: `TEST_STORAGE_ENGINE=postgres` runs every store test and
/// every service process test on PostgreSQL (`scripts/test` runs the suites once per engine);
/// unset or `sqlite`, on SQLite files.
public enum TestStorage {
    /// The engine chosen for this test process.
    public static let engine: StorageEngine = {
        ProcessInfo.processInfo.environment["TEST_STORAGE_ENGINE"] == "postgres" ? .postgres : .sqlite
    }()

    private static let made = Locked<[String: DatabaseLocation]>([:])

    /// Where a test's database `name` in `directory` lives: `<directory>/<name>.sqlite`, or on
    /// PostgreSQL a fresh database on the test server, the same one each time it is asked for
    /// with the same directory and name (a test that reopens or restarts finds its data).
    /// - Throws: `TestSupportError` when the PostgreSQL test server cannot start.
    public static func location(_ directory: String, _ name: String) throws -> DatabaseLocation {
        switch engine {
        case .sqlite: return .sqlite(path: "\(directory)/\(name).sqlite")
        case .postgres:
            let key = "\(directory)\u{0}\(name)"
            if let found = made.withLock({ $0[key] }) { return found }
            let location = DatabaseLocation.postgres(url: try TestPostgres.shared().makeDatabase())
            return made.withLock { made in
                if let raced = made[key] { return raced }
                made[key] = location
                return location
            }
        }
    }

    /// The URL form of `location(directory, name)`, for a service's `<PREFIX>_DATABASE_URL`.
    /// - Throws: as `location`.
    public static func url(_ directory: String, _ name: String) throws -> String {
        switch try location(directory, name) {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let url): url
        }
    }
}

/// A PostgreSQL server the tests start themselves: one per test process, on first use, in a
/// temporary directory, on an ephemeral port of 127.0.0.1 (and a Unix socket in that
/// directory), run by an unprivileged user (`insta-pg`, created when the tests run as root:
/// PostgreSQL refuses to run as root). It stops when the test process ends, however it ends: a
/// watcher holds a pipe from this process and stops the server (immediate mode) and removes the
/// directory at its end of file.
///
/// Authentication: `scram-sha-256` on the socket and on TCP (never `trust`: any local process
/// could connect as the superuser), with a password generated at start and kept for clients in a
/// libpq password file of mode 0600 (`passfile`, named in every URL this type gives out).
///
/// Settings for tests: `fsync=off` (the OS keeps what was written; a test never loses power),
/// `synchronous_commit` stays on (an immediate stop must not lose an acknowledged commit);
/// `idle_session_timeout=20s` closes the connections of test fixtures that are never released
/// (a connection in use reconnects when it finds itself closed: `PostgresConnection`).
public final class TestPostgres: Sendable {
    /// The port the server listens on.
    public let port: Int
    /// The directory holding the cluster, the socket and the log.
    public let directory: String
    private let admin: Locked<PostgresConnectionBox>
    private let counter = Locked(0)

    private static let instance = Locked<Result<TestPostgres, TestSupportError>?>(nil)

    /// The server for this test process, started on the first call.
    /// - Throws: `TestSupportError` when it cannot be started (PostgreSQL not installed: the
    ///   message names the Debian package).
    public static func shared() throws -> TestPostgres {
        try instance.withLock { instance in
            if instance == nil {
                do { instance = .success(try TestPostgres()) } catch let error as TestSupportError {
                    instance = .failure(error)
                } catch { instance = .failure(TestSupportError("\(error)")) }
            }
            return try instance!.get()
        }
    }

    /// Starts a server of the caller's own (for a test that stops and starts it), stopped
    /// when the test process ends.
    /// - Throws: `TestSupportError`.
    public static func start() throws -> TestPostgres { try TestPostgres() }

    /// The directory with `initdb`, `pg_ctl` and `postgres` (the newest of Debian's
    /// `/usr/lib/postgresql/<version>/bin`), nil when PostgreSQL is not installed.
    public static var binDirectory: String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        for version in versions.reversed() where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        return nil
    }

    /// The system user PostgreSQL runs as when the tests run as root.
    static let user = "insta-pg"

    private init() throws {
        guard let bin = Self.binDirectory else {
            throw TestSupportError("PostgreSQL is not installed: install the Debian package postgresql (scripts/install-deps)")
        }
        let directory = makeTemporaryDirectory("pg")
        self.directory = directory
        let asRoot = geteuid() == 0
        if asRoot {
            try Self.ensureUser()
            try Self.run("/bin/chown", ["-R", Self.user, directory])
        }
        func command(_ tool: String, _ arguments: [String]) -> (String, [String]) {
            asRoot ? ("/usr/sbin/runuser", ["-u", Self.user, "--", "\(bin)/\(tool)"] + arguments) : ("\(bin)/\(tool)", arguments)
        }
        let data = "\(directory)/data"
        // The superuser's password: for initdb in a file only the server's user reads (removed
        // after), for clients in the password file.
        let password = RandomID.make()
        let pwfile = "\(directory)/pwfile"
        try Self.writePrivate(pwfile, password + "\n")
        if asRoot { try Self.run("/bin/chown", [Self.user, pwfile]) }
        let (initdb, initArgs) = command(
            "initdb",
            [
                "-D", data, "-U", "insta", "--auth=scram-sha-256", "--pwfile=\(pwfile)", "-E", "UTF8", "--no-sync",
                "--locale=C.UTF-8",
            ])
        try Self.run(initdb, initArgs)
        try? FileManager.default.removeItem(atPath: pwfile)
        try Self.writePrivate(Self.passfile(directory), "*:*:*:insta:\(password)\n")
        var lastError = ""
        var started: Int?
        for _ in 0..<5 {
            // The settings go into postgresql.conf (a later line wins), so that a plain
            // `pg_ctl start` after a stop (`control`) finds the same port and socket.
            let port = try Self.freePort()
            let settings = """

                port = \(port)
                unix_socket_directories = '\(directory)'
                listen_addresses = '127.0.0.1'
                fsync = off
                full_page_writes = off
                max_connections = 1000
                shared_buffers = 64MB
                deadlock_timeout = 100ms
                idle_session_timeout = 20s

                """
            guard let conf = FileHandle(forWritingAtPath: "\(data)/postgresql.conf") else {
                throw TestSupportError("cannot write \(data)/postgresql.conf")
            }
            conf.seekToEndOfFile()
            conf.write(Data(settings.utf8))
            conf.closeFile()
            let (pgctl, args) = command(
                "pg_ctl", ["-D", data, "-w", "-t", "60", "-l", "\(directory)/postgres.log", "start"])
            do {
                try Self.run(pgctl, args)
                started = port
                break
            } catch {
                lastError = "\(error): " + ((try? String(contentsOfFile: "\(directory)/postgres.log", encoding: .utf8)) ?? "")
            }
        }
        guard let port = started else { throw TestSupportError("PostgreSQL did not start: \(lastError.suffix(2000))") }
        self.port = port
        // The watcher: stops the server when this process's end of the pipe closes.
        let (pgctl, stopArgs) = command("pg_ctl", ["-D", data, "-m", "immediate", "stop"])
        let stop = ([pgctl] + stopArgs).map { "'\($0)'" }.joined(separator: " ")
        let watcher = try ChildProcess(
            "/bin/sh", ["-c", "cat >/dev/null; \(stop) >/dev/null 2>&1; rm -rf '\(directory)'"], stdin: .pipe,
            stdout: .null, stderr: .null)
        Self.watchers.withLock { $0.append(watcher) }
        admin = Locked(PostgresConnectionBox(try PostgresConnection(url: Self.url(directory, port, "postgres"))))
    }

    /// Watchers live as long as the process (their pipes close only when it ends).
    private static let watchers = Locked<[ChildProcess]>([])

    /// Creates a fresh, empty database and returns its URL (`postgresql://insta@<socket directory>:<port>/t<n>`).
    /// - Throws: `DatabaseError`.
    public func makeDatabase() throws -> String {
        let n = counter.withLock {
            $0 += 1
            return $0
        }
        let name = "t\(n)_\(RandomID.make().prefix(6).lowercased())"
        try admin.withLock { try $0.connection.createDatabase(name) }
        return url(database: name)
    }

    /// Ends every session connected to the database `url` names (`pg_terminate_backend`), as a
    /// failover or an administrator would.
    /// - Throws: `DatabaseError`.
    public func terminateSessions(of url: String) throws {
        guard let name = url.split(separator: "/").last.map({ String($0.split(separator: "?")[0]) }) else { return }
        try admin.withLock { try $0.connection.terminateSessions(database: name) }
    }

    /// The URL of database `name` on this server.
    public func url(database name: String) -> String { Self.url(directory, port, name) }

    /// The URL of database `name` without the password file: a client that has not been given
    /// the password (the tests show it is refused).
    public func urlWithoutPassword(database name: String) -> String {
        String(url(database: name).prefix { $0 != "?" })
    }

    /// A URL through the server's Unix socket in `directory` (libpq: a host that is a path,
    /// percent-encoded): a round trip costs about two thirds of one over TCP on loopback
    /// (pgbench -S here: 86 µs against 127 µs). The password comes from the password file.
    static func url(_ directory: String, _ port: Int, _ name: String) -> String {
        let host = directory.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? directory
        let passfile = passfile(directory).addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        return "postgresql://insta@\(host):\(port)/\(name)?passfile=\(passfile)"
    }

    /// The libpq password file of the server in `directory`.
    static func passfile(_ directory: String) -> String { "\(directory)/pgpass" }

    /// Writes `text` to a new file of mode 0600.
    private static func writePrivate(_ path: String, _ text: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else { throw TestSupportError("cannot write \(path)") }
    }

    /// Runs `pg_ctl` as the server's user with `arguments` (`-D` and, to start, `-l` added):
    /// for tests that stop and start the server.
    /// - Throws: `TestSupportError` when it fails.
    public func control(_ arguments: [String]) throws {
        guard let bin = Self.binDirectory else { throw TestSupportError("PostgreSQL is not installed") }
        // A started server logs to the file, never to this pipe (it would hold it open).
        let data = ["-D", "\(directory)/data"] + (arguments.contains("start") ? ["-l", "\(directory)/postgres.log"] : [])
        if geteuid() == 0 {
            try Self.run("/usr/sbin/runuser", ["-u", Self.user, "--", "\(bin)/pg_ctl"] + data + arguments)
        } else {
            try Self.run("\(bin)/pg_ctl", data + arguments)
        }
    }

    private static func ensureUser() throws {
        if getpwnam(user) != nil { return }
        let (termination, _) = try ChildProcess.output(
            "/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user])
        // Another test process may have made it meanwhile (useradd exits 9: already exists).
        guard termination == .exited(0) || getpwnam(user) != nil else {
            throw TestSupportError("useradd \(user) ended with \(termination)")
        }
    }

    private static func run(_ executable: String, _ arguments: [String]) throws {
        let child = try ChildProcess(executable, arguments, stdout: .pipe, stderr: .pipe)
        let output = child.readToEnd(child.standardOutput)
        let errors = child.readToEnd(child.standardError)
        let termination = child.waitUntilExit()
        guard termination == .exited(0) else {
            throw TestSupportError(
                "\(executable) \(arguments.joined(separator: " ")) ended with \(termination): "
                    + String(decoding: output + errors, as: UTF8.self).suffix(1500))
        }
    }

    /// A port the kernel gave out for 127.0.0.1 just now (bound to port 0, then closed).
    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                bind(fd, p, length) == 0 && getsockname(fd, p, &length) == 0
            }
        }
        guard bound else { throw TestSupportError("bind: \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// A connection held under a lock (the admin connection that creates databases).
final class PostgresConnectionBox: @unchecked Sendable {
    // @unchecked: only used inside `Locked.withLock`.
    let connection: PostgresConnection
    init(_ connection: PostgresConnection) { self.connection = connection }
}
