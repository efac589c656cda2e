import Shared

let runtime = ServiceRuntime(name: "profile")
await runtime.runStandard(envPrefix: "PROFILE", rpcPort: 5553, eventsPort: 5554, migrations: []) { host, database in
    []
}
