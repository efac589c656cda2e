import Foundation

/// Command-line options shared by every scenario (`--name value`; `--baseline` is a flag).
struct Options: Sendable {
    var url = "http://127.0.0.1:8080"
    /// Users to register in setup.
    var users = 1_000
    var seed: UInt64 = 1
    /// Likes per second (open loop).
    var rate = 100.0
    /// Seconds of load.
    var duration = 10.0
    /// Open notification streams.
    var streams = 100
    /// Post owners in the likes scenario (the first `streams` of them hold streams); default = streams.
    var owners: Int?
    /// Celebrity followers (notifyPosts); default users - 1.
    var followers: Int?
    /// Celebrity posts.
    var posts = 1
    /// Seconds between celebrity posts.
    var postInterval = 1.0
    /// Average follows per user in the power-law graph.
    var followsPerUser = 10
    /// How setup creates users and follows: `import` (default: `auth.import_users` and
    /// `notification.import_follows` over ZeroMQ, one argon2id hash in all) or `http` (one
    /// `POST /v1/auth/register` per user and one `PUT .../follow` per edge).
    var registerVia = RegisterVia.import
    /// Users per `auth.import_users` request (1...5,000).
    var importBatch = 5_000
    /// Import requests in flight.
    var importConcurrency = 3
    /// Environment for `ServiceLink` over the process's (the smoke run's ephemeral endpoints).
    var serviceEnvironment: [String: String] = [:]
    /// Concurrent registrations (argon2 makes each one slow).
    var registerConcurrency = 4
    /// Concurrent requests for setup and checks.
    var concurrency = 64
    /// Seconds to wait after the load for late notifications.
    var grace = 5.0
    /// Followers whose lists are checked after a celebrity post (default all).
    var checkSample: Int?
    /// Seconds between the starts of two rounds of list checks (celebrity).
    var checkInterval = 1.0
    /// At most this many list checks per second (celebrity): a round of many followers is spread
    /// over more than `checkInterval` rather than loading the system it measures.
    var checkRate = 1_000.0
    var reportDir: String?
    /// Cached users file; default `<reports>/users-<host_port>-seed<S>.json`.
    var usersFile: String?
    /// Also run the raw libzmq baseline and the nginx + nchan one with the same shape.
    var baseline = false
    /// With `baseline`: also nginx + nchan (`--no-nchan` turns it off).
    var nchan = true
    /// Payload bytes of a baseline message (default: the mean notification size seen).
    var payloadBytes: Int?
    /// Username prefix of users registered earlier (e.g. by a run whose users file is gone) to
    /// adopt instead of registering new ones; see `Setup.adopt`.
    var adopt: String?
    /// push: the stand-in APNs's log of accepted pushes (`$msec $request_uri $request_body` per
    /// line, as scripts/bench-push.py configures nginx).
    var apnsLog: String?
    /// push: users who like the owners' posts (each logs in).
    var likers = 20

    /// Parses `arguments` (after the scenario name).
    /// - Throws: `LoadTestError` naming an unknown option or a bad value.
    init(_ arguments: [String]) throws {
        var i = 0
        func value() throws -> String {
            i += 1
            guard i < arguments.count else { throw LoadTestError("\(arguments[i - 1]) needs a value") }
            return arguments[i]
        }
        func number(_ v: String, _ name: String) throws -> Double {
            guard let d = Double(v.replacingOccurrences(of: "_", with: "")), d >= 0 else {
                throw LoadTestError("\(name): not a number: \(v)")
            }
            return d
        }
        while i < arguments.count {
            let a = arguments[i]
            switch a {
            case "--url": url = try value().trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            case "--users": users = Int(try number(try value(), a))
            case "--seed": seed = UInt64(try number(try value(), a))
            case "--rate": rate = try number(try value(), a)
            case "--duration": duration = try number(try value(), a)
            case "--streams": streams = Int(try number(try value(), a))
            case "--owners": owners = Int(try number(try value(), a))
            case "--followers": followers = Int(try number(try value(), a))
            case "--posts": posts = Int(try number(try value(), a))
            case "--post-interval": postInterval = try number(try value(), a)
            case "--follows-per-user": followsPerUser = Int(try number(try value(), a))
            case "--register-via":
                let v = try value()
                guard let via = RegisterVia(rawValue: v) else {
                    throw LoadTestError("--register-via: import or http, not \(v)")
                }
                registerVia = via
            case "--import-batch":
                importBatch = Int(try number(try value(), a))
                guard (1...5_000).contains(importBatch) else { throw LoadTestError("--import-batch: 1 to 5000") }
            case "--import-concurrency": importConcurrency = max(1, Int(try number(try value(), a)))
            case "--register-concurrency": registerConcurrency = max(1, Int(try number(try value(), a)))
            case "--concurrency": concurrency = max(1, Int(try number(try value(), a)))
            case "--grace": grace = try number(try value(), a)
            case "--check-sample": checkSample = Int(try number(try value(), a))
            case "--check-interval": checkInterval = try number(try value(), a)
            case "--check-rate": checkRate = max(1, try number(try value(), a))
            case "--report-dir": reportDir = try value()
            case "--users-file": usersFile = try value()
            case "--payload-bytes": payloadBytes = Int(try number(try value(), a))
            case "--adopt": adopt = try value()
            case "--apns-log": apnsLog = try value()
            case "--likers": likers = max(1, Int(try number(try value(), a)))
            case "--baseline": baseline = true
            case "--no-nchan": nchan = false
            default: throw LoadTestError("unknown option \(a)")
            }
            i += 1
        }
        if url.hasPrefix("http://") == false && url.hasPrefix("https://") == false {
            url = "http://" + url
        }
    }

    /// The report directory for `scenario`: `--report-dir` or `./reports/<scenario>-<UTC timestamp>`.
    func reportDirectory(_ scenario: String) -> String {
        if let d = reportDir { return d }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd-HHmmss"
        return "./reports/\(scenario)-\(f.string(from: Date()))"
    }

    /// The cached users file.
    var usersFilePath: String {
        if let f = usersFile { return f }
        let hostPort = url.replacingOccurrences(of: "http://", with: "").replacingOccurrences(
            of: "https://", with: ""
        )
        .replacingOccurrences(of: ":", with: "_").replacingOccurrences(of: "/", with: "_")
        return "./reports/users-\(hostPort)-seed\(seed).json"
    }
}

/// How setup creates users and follows (`--register-via`).
enum RegisterVia: String, Sendable {
    /// `auth.import_users` / `notification.import_follows` over ZeroMQ.
    case `import`
    /// The public HTTP API, one registration (argon2id) per user.
    case http
}
