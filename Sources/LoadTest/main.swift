import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// LoadTest: notification fan-out load against the running system, through its HTTP API and
/// notification streams (setup imports users and follows through the services over ZeroMQ
/// unless `--register-via http`). See `usage`.
let usage = """
    usage: LoadTest setup|likes|celebrity|push|baseline|smoke|memory [options]
           LoadTest --help | -h    this text (exit 0)
      --url URL               gateway (default http://127.0.0.1:8080)
      --users N               users to create (default 1000); user 0 is the celebrity
      --seed S                random seed (default 1): same seed, same graph and actions
      --rate R                likes per second, open loop (default 100)
      --duration T            seconds of load (default 10)
      --streams K             open notification streams (default 100)
      --owners O              likes: post owners, the first K of them streaming (default K)
      --followers F           celebrity followers with notifyPosts (default users-1)
      --posts P               celebrity posts (default 1), --post-interval seconds (default 1)
      --follows-per-user D    mean out-degree of the power-law graph (default 10; 0 skips it)
      --register-via import|http  how setup creates users and follows (default import):
                              import = auth.import_users (5,000 users a request, one argon2id
                              hash for all) and notification.import_follows (no follow notifications)
                              over ZeroMQ, at AUTH_RPC_ENDPOINT, PROFILE_RPC_ENDPOINT and
                              NOTIFICATION_RPC_ENDPOINT (default tcp://127.0.0.1:5551/5553/5555;
                              CURVE_* as for the services); http = one POST /v1/auth/register
                              per user and one PUT /v1/users/{name}/follow per edge.
                              The users a scenario acts as get sessions by auth.import_sessions
                              (import; AuthService needs ALLOW_IMPORTS=1, as
                              scripts/run-local sets it, else they log in) or log in (http)
      --import-batch B        users (or sessions) per import request (default 5000, at most 5000)
      --import-concurrency C  import requests in flight (default 3)
      --register-concurrency C  concurrent HTTP registrations (default 4; argon2 is slow)
      --concurrency C         concurrent setup/check requests (default 64)
      --grace S               seconds to wait for late notifications (default 5)
      --check-sample N        celebrity: followers whose lists are checked (default min(F, 2000))
      --check-interval S      celebrity: seconds between rounds of list checks (default 1)
      --check-rate R          celebrity: at most R list checks a second (default 1000); a round
                              of many followers is spread over more than the interval
      --baseline              also run the same shape through raw libzmq PUB/SUB and through
                              nginx + nchan (SSE subscribers, HTTP publishing; needs the Debian
                              packages nginx and libnginx-mod-nchan)
      --no-nchan              with --baseline: skip nginx + nchan
      --payload-bytes B       baseline payload (default: mean notification size seen)
      --users-file PATH       cached users (default ./reports/users-<host_port>-seed<S>.json)
      --adopt PREFIX          setup: adopt users PREFIX_0..N-1 registered earlier (ids looked up,
                              tokens from logins only for the users a scenario acts as)
      --apns-log PATH         push: the stand-in APNs's log of accepted pushes (scripts/bench push
                              starts nginx as one); push: users 1...F follow the celebrity and
                              have a device each, the next --owners O (default 100) own a post
                              each and have a device, the next --likers L (default 20) like them
                              at --rate for --duration; the celebrity posts a third of the way in
      --likers L              push: users who like (default 20; rate × duration ≤ O × L)
      --report-dir DIR        default ./reports/<scenario>-<timestamp>
    """

func raiseFileLimit() {
    var lim = rlimit()
    if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &lim) == 0 {
        lim.rlim_cur = lim.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &lim)
    }
}

func main() async -> Int32 {
    signal(SIGPIPE, SIG_IGN)
    raiseFileLimit()
    var args = Array(CommandLine.arguments.dropFirst())
    // Asked for: the usage on stdout, success (anywhere on the line, e.g. `LoadTest likes --help`).
    if args.contains("--help") || args.contains("-h") || args.first == "help" {
        print(usage)
        return 0
    }
    guard let scenario = args.first, !scenario.hasPrefix("-") else {
        print(usage)
        return 2
    }
    args.removeFirst()
    do {
        let options = try Options(args)
        switch scenario {
        case "memory":
            let port = URLComponents(string: options.url)?.port ?? 80
            for (name, kb) in ServiceMemory.peaks(gatewayPort: port).sorted(by: { $0.key < $1.key }) {
                print("\(name) \(kb) kB")
            }
            return 0
        case "smoke":
            return try await SmokeScenario.run(options)
        case "baseline":
            if options.nchan, let missing = NginxNchan.missing() { throw LoadTestError(missing) }
            let (engine, streams) = (CurlEngine(), CurlEngine())
            defer {
                engine.shutdown()
                streams.shutdown()
            }
            var report = RunReport(
                scenario: "baseline", seed: options.seed, url: "inproc libzmq",
                startedAt: RunReport.timestamp())
            report.parameters = [
                "subscribers": "\(options.streams)", "rate": "\(options.rate)",
                "duration": "\(options.duration)",
            ]
            var plots = PlotData()
            await Baselines.run(
                &report, &plots, engine: engine, streams: streams, options: options, subscribers: options.streams,
                rate: options.rate,
                duration: options.duration, payloadBytes: options.payloadBytes ?? 400, fanout: false)
            report.durationS = options.duration
            report.peakRSSKB = ServiceMemory.peaks(pids: [:])
            for (name, b) in [("baseline", report.baseline), ("nchan baseline", report.nchanBaseline)] {
                guard let b else { continue }
                if b.lost == 0 {
                    report.checks.append("\(name) lost nothing")
                } else {
                    report.failures.append("\(name) lost \(b.lost)")
                }
            }
            try ReportWriter.write(report, plots: plots, to: options.reportDirectory("baseline"))
            return report.failures.isEmpty ? 0 : 1
        case "setup", "likes", "celebrity", "push":
            // Before any setup, not after a long run.
            if scenario != "setup" && options.baseline && options.nchan, let missing = NginxNchan.missing() {
                throw LoadTestError(missing)
            }
            let (engine, streams) = (CurlEngine(), CurlEngine())
            defer {
                engine.shutdown()
                streams.shutdown()
            }
            let api = GatewayAPI(engine: engine, streams: streams, baseURL: options.url)
            let ready = await api.call("GET", "/healthz")
            guard ready.status == 200 else {
                throw LoadTestError(
                    "gateway at \(options.url) not answering /healthz (\(ready.status) \(ready.error ?? ""))")
            }
            if scenario == "setup" {
                let pop = try await Setup.run(api, options)
                print(
                    "setup: \(pop.users.count) users, \(pop.graphFollows) graph follows, celebrity \(pop.users[0].username) with \(pop.celebrityFollowers) followers; cached in \(options.usersFilePath)"
                )
                return 0
            }
            let (report, plots) =
                scenario == "likes"
                ? try await LikesScenario.run(api, options)
                : scenario == "push" ? try await PushScenario.run(api, options) : try await CelebrityScenario.run(api, options)
            try ReportWriter.write(report, plots: plots, to: options.reportDirectory(scenario))
            return report.failures.isEmpty ? 0 : 1
        default:
            print(usage)
            return 2
        }
    } catch {
        log("LoadTest: \(error)")
        return 1
    }
}

exit(await main())
