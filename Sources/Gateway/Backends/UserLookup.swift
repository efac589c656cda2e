import Messages
import Support

/// Public users by id, one `profile.users_by_ids` call per batch, remembering the last answer
/// for each user (bounded) as the fallback for live stream events while ProfileService is
/// unreachable.
struct UserLookup: Sendable {
    let profile: any ServiceBackend
    private let recent = Locked<[String: PublicUser]>([:])
    /// Most users remembered (cleared when full).
    let capacity = 50_000

    init(profile: any ServiceBackend) { self.profile = profile }

    /// Users by id (unknown ids left out). - Throws: ProfileService's errors.
    func users(_ ids: [String]) async throws -> [String: PublicUser] {
        var unique: [String] = []
        var seen = Set<String>()
        for id in ids where seen.insert(id).inserted { unique.append(id) }
        if unique.isEmpty { return [:] }
        let reply = try await profile.call(Profile.UsersByIds.self, .init(ids: unique))
        let users = Dictionary(reply.users.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let capacity = self.capacity
        recent.withLock { cache in
            if cache.count > capacity { cache.removeAll() }
            cache.merge(users) { _, new in new }
        }
        return users
    }

    /// The last known users for `ids` (no call).
    func remembered(_ ids: [String]) -> [String: PublicUser] {
        recent.withLock { cache in
            Dictionary(ids.compactMap { id in cache[id].map { (id, $0) } }, uniquingKeysWith: { a, _ in a })
        }
    }
}
