import Messages
import Storage

/// NotificationService's replica of the public profile fields an actor is shown with (name,
/// bio, photo URL; the username is the identity replica's), kept current by ProfileService's
/// `profile.user.changed` events, which it sends when a profile is created and whenever those
/// fields change. A notification whose event carried no actor (a follow, a fan-out batch of a
/// job stored without its owner) is published with the actor from here, so the gateway shows
/// it without asking ProfileService. An actor this replica has not met (an account imported in
/// bulk, which sends no per-account events, or one from before the replica) is published
/// without one, and the gateway looks it up as before.
///
/// Table `actor_profiles`: `actor` (the identity key), `name`, `bio`, `photo_url` (NULL: none).
enum ActorProfiles {
    /// The migration that creates the table (both engines).
    static func migration(for id: String) -> Migration {
        Migration(
            id,
            sqlite: """
                CREATE TABLE actor_profiles(
                    actor INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    bio TEXT NOT NULL,
                    photo_url TEXT);
                """,
            postgres: """
                CREATE TABLE actor_profiles(
                    actor BIGINT PRIMARY KEY,
                    name TEXT NOT NULL,
                    bio TEXT NOT NULL,
                    photo_url TEXT);
                """)
    }

    /// Stores `user`'s public fields as the actor's current ones, in `tx`. Events come in
    /// ProfileService's order, so the last applied is the newest. - Throws: the engine's error.
    static func apply(_ user: PublicUser, in tx: Transaction) throws {
        let actor = try Keys.user(user.id, in: tx)
        try tx.query(
            """
            INSERT INTO actor_profiles(actor, name, bio, photo_url) VALUES (\(actor), \(user.name), \(user.bio),
                CAST(\(user.profilePhotoURL) AS TEXT))
            ON CONFLICT (actor) DO UPDATE SET name = excluded.name, bio = excluded.bio, photo_url = excluded.photo_url
            """)
    }

    /// The public user of actor `key` (id `id`), nil when the replica lacks its profile or its
    /// username. - Throws: the engine's error.
    static func user(_ key: Int64, id: String, on c: DatabaseConnection) throws -> PublicUser? {
        guard
            let row = try c.queryOne(
                """
                SELECT i.username, a.name, a.bio, a.photo_url FROM actor_profiles a
                JOIN identities i ON i.key = a.actor WHERE a.actor = \(key)
                """),
            let username = try row.optionalString("username")
        else { return nil }
        return PublicUser(
            id: id, username: username, name: try row.string("name"), bio: try row.string("bio"),
            profilePhotoURL: try row.optionalString("photo_url"))
    }
}
