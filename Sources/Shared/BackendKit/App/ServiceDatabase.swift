import ServiceKit
import Storage
import Support

/// Where a service's database is, as its configuration names it, for `ServiceRunner` and for an
/// executable's operator commands (`ServiceApp.command`, e.g. `AuthService moderator grant
/// alice`), so a command run beside a service (on its machine, in its container, with its
/// environment) opens the very database the service uses.
public enum ServiceDatabase {
    /// `<PREFIX>_DATABASE_URL` (`sqlite:<path>`, a `postgres://` URL), by default
    /// `sqlite:<name>.sqlite` under `DATA_DIR`.
    /// - Throws: `ConfigurationError` naming the variable that is wrong.
    public static func location(_ description: ServiceDescription, env: Environment) throws -> DatabaseLocation {
        try DatabaseLocation(
            url: env.string("\(description.envPrefix)_DATABASE_URL", default: "sqlite:\(description.name).sqlite"),
            dataDirectory: try env.dataDirectory())
    }

    /// Opens (and migrates, as the service would) `App`'s database with one reader connection.
    /// - Throws: `ConfigurationError`, or the engine's error when it cannot be opened.
    public static func open<App: ServiceApp>(_ app: App.Type, env: Environment) throws -> Database {
        try Database(
            location: try location(App.description, env: env), producer: App.description.name,
            migrations: App.migrations, legacy: App.legacyMigrations, readers: 1)
    }
}
