import Shared

let runtime = ServiceRuntime(name: "auth")
await runtime.runStandard(envPrefix: "AUTH", rpcPort: 5551, eventsPort: 5552, migrations: []) { host, database in
    []
}
