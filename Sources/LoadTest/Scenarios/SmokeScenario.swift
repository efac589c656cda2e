import Foundation
import Harness
import ServiceKit

/// `LoadTest smoke`: starts its own stack (the real executables on ephemeral ports, temp
/// DATA_DIR), runs a small likes run and a small celebrity run with the baseline on users and
/// follows imported through the services, and checks zero loss, zero duplicates and
/// well-formed reports; then a resumed import, setup through HTTP, and adopting. No timing
/// assertions.
enum SmokeScenario {
    /// - Returns: the process exit code (0 when every check passed).
    static func run(_ base: Options) async throws -> Int32 {
        // Sessions for the acting users come from `auth.import_sessions`, as on run-local.
        let cluster = Cluster(extraEnvironment: ["ALLOW_IMPORTS": "1"])
        defer { cluster.stopAll() }
        try await cluster.start(["auth", "profile", "notification", "gateway"])
        let (engine, streams) = (CurlEngine(), CurlEngine())
        defer {
            engine.shutdown()
            streams.shutdown()
        }
        var options = base
        options.url = "http://127.0.0.1:\(cluster.gatewayPort)"
        options.users = 20
        options.rate = 50
        options.duration = 3
        options.streams = 5
        options.owners = 12
        options.followers = 19
        options.posts = 2
        options.postInterval = 0.5
        options.followsPerUser = 4
        options.grace = 60  // waits end as soon as everything arrived; a loaded machine must not count late as lost
        options.checkInterval = 0.2  // the persistence checks at the resolution issue 13 asks for
        options.baseline = true
        // nginx + nchan is not something the tests install: with it, the smoke runs it too.
        let nchanMissing = base.nchan ? NginxNchan.missing() : "--no-nchan"
        options.nchan = nchanMissing == nil
        if let nchanMissing { print("note: the nginx + nchan baseline is skipped: \(nchanMissing)") }
        options.usersFile = "\(cluster.dataDirectory)/loadtest-users.json"
        // Setup imports through the services at the cluster's ephemeral endpoints, with a key
        // pair of its own among the cluster's (CURVE, as the services' own clients).
        options.registerVia = .import
        options.serviceEnvironment = Dictionary(
            uniqueKeysWithValues: ServiceDescription.all.compactMap { service in
                cluster.endpoints[service.name]?["rpc"].map { ("\(service.envPrefix)_RPC_ENDPOINT", $0) }
            })
        options.serviceEnvironment["DATA_DIR"] = cluster.dataDirectory
        let reportRoot = base.reportDir ?? "\(cluster.dataDirectory)/reports"
        let api = GatewayAPI(engine: engine, streams: streams, baseURL: options.url)
        let pids = cluster.processes.reduce(into: [String: Int32]()) { out, e in
            if let pid = e.value.pid { out[ServiceMemory.names[e.key] ?? e.key] = pid }
        }
        // Readiness: /readyz 200 before the first request.
        let readyEnd = Clock.nowNs() + 30_000_000_000
        while await api.call("GET", "/readyz").status != 200 {
            guard Clock.nowNs() < readyEnd else { throw LoadTestError("gateway never became ready") }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        var passed = 0
        var failed: [String] = []
        func check(_ ok: Bool, _ what: String) {
            if ok { passed += 1 } else { failed.append(what) }
        }
        for scenario in ["likes", "celebrity"] {
            options.reportDir = "\(reportRoot)/\(scenario)"
            let (report, plots) =
                scenario == "likes"
                ? try await LikesScenario.run(api, options, memoryPids: pids)
                : try await CelebrityScenario.run(api, options, memoryPids: pids)
            try ReportWriter.write(report, plots: plots, to: options.reportDir!)
            passed += report.checks.count
            // A timeout (504) on a loaded CI machine is not what the smoke run is about: it
            // prints HTTP errors but fails only when most actions failed. Loss and duplicates
            // stay strict (a 504 whose write went through counts as unexpected, not lost).
            for f in report.failures {
                if f.hasPrefix("no HTTP errors") { print("note: \(scenario): \(f)") } else { failed.append("\(scenario): \(f)") }
            }
            check(
                report.streamsClosedEarly == 0,
                "\(scenario): no stream ended during the run (\(report.streamsClosedEarly); nothing was killed)")
            check(
                report.actionsOK * 10 >= report.actionsSent * 9 && report.actionsOK > 0,
                "\(scenario): at least 90% of actions answered 2xx (\(report.actionsOK)/\(report.actionsSent))")
            // The report files are well-formed.
            let json = FileManager.default.contents(atPath: "\(options.reportDir!)/report.json")
            let object = json.flatMap { try? JSONSerialization.jsonObject(with: $0) } as? [String: Any]
            check(object != nil, "\(scenario): report.json parses")
            for key in [
                "scenario", "delivery", "httpLatencyMs", "errorsByStatus", "peakRSSKB", "baseline",
                "throughputPerSecond",
            ] {
                check(object?[key] != nil, "\(scenario): report.json has \(key)")
            }
            if options.nchan {
                let nchan = object?["nchanBaseline"] as? [String: Any]
                check(
                    (nchan?["received"] as? Int ?? 0) > 0 && nchan?["latencyMs"] != nil && nchan?["server"] != nil,
                    "\(scenario): report.json has the nchan baseline (\(nchan?["received"] ?? "none") received)")
                let ratios = object?["baselineRatios"] as? [String: Any]
                check(
                    ratios?["systemOverLibzmq"] != nil && ratios?["systemOverNchan"] != nil
                        && ratios?["nchanOverLibzmq"] != nil,
                    "\(scenario): report.json has the latency ratios to both baselines")
            }
            let memory = object?["gatewayStreamMemory"] as? [String: Any]
            check(
                memory?["streams"] as? Int == options.streams && (memory?["rssAfterKB"] as? Int ?? 0) > 0,
                "\(scenario): report.json has the gateway's memory per stream (\(memory ?? [:]))")
            if scenario == "celebrity" {
                let persistence = object?["persistence"] as? [String: Any]
                check(
                    (persistence?["checkRequests"] as? Int ?? 0) > 0 && persistence?["effectiveCheckIntervalMs"] != nil,
                    "celebrity: report.json counts the persistence checks (\(persistence?["checkRequests"] ?? "none"))")
            }
            let delivery = object?["delivery"] as? [String: Any]
            for key in ["expected", "lost", "duplicates", "latencyMs"] {
                check(delivery?[key] != nil, "\(scenario): delivery has \(key)")
            }
            let svg =
                (try? String(contentsOfFile: "\(options.reportDir!)/report.svg", encoding: .utf8)) ?? ""
            check(
                svg.hasPrefix("<svg") && svg.contains("</svg>") && svg.contains("polyline"),
                "\(scenario): report.svg is an SVG with plot lines")
            check(
                FileManager.default.fileExists(atPath: "\(options.reportDir!)/report.html"),
                "\(scenario): report.html exists")
            check(
                report.peakRSSKB.count >= 4,
                "\(scenario): peak RSS of the services read (\(report.peakRSSKB.keys.sorted()))")
            let services = ServiceMemory.executables
            check(
                services.allSatisfy { report.cpuPerActionMs[$0] != nil } && report.cpuPerActionMs["total"] != nil
                    && (object?["cpuPerActionMs"] as? [String: Any])?["total"] != nil,
                "\(scenario): CPU per action of every service and in total, in report.json (\(report.cpuPerActionMs))")
        }
        // The imported population: every user in it, the celebrity followed by all the others.
        let registered = try Setup.load(options.usersFile!)
        check(registered.users.count == options.users, "import: \(registered.users.count) users in the users file")
        let celebrityHeader = await api.call(
            "GET", "/v1/users/\(registered.users[0].username)", token: registered.users[0].token)
        let counts = celebrityHeader.object["counts"] as? [String: Any]
        check(
            counts?["followers"] as? Int == options.users - 1,
            "import: the celebrity has \(options.users - 1) followers (\(counts?["followers"] ?? "none"))")
        // A resumed setup: five more users, the first ones kept (same ids), the new ones followers.
        var more = options
        more.users = options.users + 5
        more.followers = options.users + 4
        let grown = try await Setup.run(api, more, followers: more.followers)
        check(
            grown.users.count == more.users && grown.users.prefix(options.users).map(\.id) == registered.users.map(\.id),
            "import: a resumed setup keeps the users and adds \(grown.users.count - registered.users.count)")
        check(grown.celebrityFollowers == more.users - 1, "import: the new users follow the celebrity too")
        // The HTTP path still works (`--register-via http`): a few registrations, each logged in.
        var http = options
        http.registerVia = .http
        http.users = 4
        http.followers = 3
        http.followsPerUser = 1
        http.usersFile = "\(cluster.dataDirectory)/loadtest-http.json"
        let viaHTTP = try await Setup.run(api, http, followers: 3)
        check(
            viaHTTP.users.count == 4 && viaHTTP.users.allSatisfy { !$0.token.isEmpty } && viaHTTP.celebrityFollowers == 3
                && viaHTTP.graphFollows > 0,
            "http: 4 users registered and logged in, the graph and 3 celebrity followers made")
        // Adopting the same users (as after losing the users file): same ids, the celebrity's
        // followers recognised, and a celebrity run on them logs in only whom it needs.
        var adoptOptions = more
        adoptOptions.adopt = registered.prefix
        adoptOptions.usersFile = "\(cluster.dataDirectory)/loadtest-adopted.json"
        adoptOptions.reportDir = "\(reportRoot)/celebrity-adopted"
        adoptOptions.posts = 1
        adoptOptions.checkSample = 4
        adoptOptions.streams = 3
        adoptOptions.baseline = false
        adoptOptions.followsPerUser = 0  // building the graph would log everyone in
        let (adoptedReport, adoptedPlots) = try await CelebrityScenario.run(api, adoptOptions, memoryPids: pids)
        try ReportWriter.write(adoptedReport, plots: adoptedPlots, to: adoptOptions.reportDir!)
        let adopted = try Setup.load(adoptOptions.usersFile!)
        check(adopted.users.map(\.id) == grown.users.map(\.id), "adopt: the same users, ids looked up")
        check(adopted.celebrityFollowers == grown.users.count - 1, "adopt: the celebrity's followers recognised")
        let loggedIn = adopted.users.filter { !$0.token.isEmpty }.count
        check(
            loggedIn >= 1 + 3 && loggedIn <= 1 + 3 + 4,
            "adopt: only the celebrity, the streaming and the checked followers logged in (\(loggedIn))")
        passed += adoptedReport.checks.count
        for f in adoptedReport.failures where !f.hasPrefix("no HTTP errors") { failed.append("celebrity-adopted: \(f)") }
        // Last, since it kills the gateway: a stream resumes across its death.
        let resume = try await StreamResumeSmoke.run(api, cluster: cluster, population: grown, options: options)
        passed += resume.passed
        failed += resume.failures
        for f in failed { print("FAILED: \(f)") }
        print("loadtest smoke: \(passed) passed, \(failed.count) failed")
        return failed.isEmpty ? 0 : 1
    }
}
