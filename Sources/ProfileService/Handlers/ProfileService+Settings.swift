import Shared

extension ProfileService {
    func registerSettings(on host: ServiceHost) {
        host.on(Profile.GetSettings.self) { request, _ in
            settings.settings(for: try await directory.require(id: request.userId))
        }
        host.on(Profile.UpdateSettings.self) { request, _ in
            _ = try await directory.require(id: request.userId)
            let user = try await database.write { tx -> UserRecord? in
                try tx.query(
                    "UPDATE users SET save_original_posts = ? WHERE id = ?",
                    [request.saveOriginalPosts, request.userId])
                return try UserRows.byId(request.userId, tx.connection)
            }
            guard let user else { throw ServiceError.notFound("user") }
            return settings.settings(for: user)
        }
    }
}
