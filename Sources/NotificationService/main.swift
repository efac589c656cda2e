import Shared

let runtime = ServiceRuntime(name: "notification")
await runtime.runStandard(envPrefix: "NOTIFICATION", rpcPort: 5555, eventsPort: 5556, migrations: []) { host, database in
    []
}
