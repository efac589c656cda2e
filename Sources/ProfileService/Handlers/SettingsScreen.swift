import Messages
import ServiceKit

/// The settings screen (API.md `GET /v1/settings`): the seed's three sections, in order, with
/// the configured URLs.
struct SettingsScreen: Sendable {
    let configuration: ProfileConfiguration
    /// The settings screen for `user`: the seed's three sections, in order.
    func settings(for user: UserRecord) -> Profile.Settings {
        typealias Item = Profile.Settings.Item
        typealias Action = Profile.Settings.Action
        return Profile.Settings(sections: [
            .init(
                title: "",
                items: [
                    Item(id: "edit_profile", title: "Edit Profile", action: Action(type: "edit_profile")),
                    Item(
                        id: "invite_friends", title: "Invite Friends",
                        action: Action(
                            type: "share", text: "Follow me on Instagram: @\(user.username)", url: configuration.inviteURL)),
                    Item(
                        id: "save_original_posts", title: "Save Original Posts",
                        action: Action(type: "toggle", value: user.saveOriginalPosts)),
                ]),
            .init(
                title: "",
                items: [
                    Item(
                        id: "terms_of_service", title: "Terms of Service",
                        action: Action(type: "open_url", url: configuration.termsURL)),
                    Item(
                        id: "privacy_policy", title: "Privacy Policy",
                        action: Action(type: "open_url", url: configuration.privacyURL)),
                    Item(
                        id: "help_feedback", title: "Help / Feedback",
                        action: Action(type: "open_url", url: configuration.helpURL)),
                ]),
            .init(
                title: "",
                items: [
                    Item(
                        id: "log_out", title: "Log Out",
                        action: Action(
                            type: "logout", confirmTitle: "Log Out",
                            confirmMessage: "Are you sure you want to log out?"))
                ]),
        ])
    }
}
