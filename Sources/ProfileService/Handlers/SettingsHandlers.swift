import BackendKit
import Messages
import Wire

/// Settings: `profile.get_settings`, `profile.update_settings`.
struct SettingsHandlers: Sendable {
    let users: any ProfileStore
    let screen: SettingsScreen

    func register(on host: ServiceHost) {
        host.on(Profile.GetSettings.self) { request, _ in
            guard let user = try await users.user(id: request.userId) else { throw ServiceError.notFound("user") }
            return screen.settings(for: user)
        }
        host.on(Profile.UpdateSettings.self) { request, _ in
            guard try await users.user(id: request.userId) != nil,
                let user = try await users.setSaveOriginalPosts(userId: request.userId, request.saveOriginalPosts)
            else { throw ServiceError.notFound("user") }
            return screen.settings(for: user)
        }
    }
}
