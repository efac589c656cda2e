import Shared

/// The settings screen's configurable URLs (environment, defaulting to the seeds' values).
struct SettingsConfig: Sendable {
    /// `PROFILE_TERMS_URL`.
    var termsURL: String
    /// `PROFILE_PRIVACY_URL`.
    var privacyURL: String
    /// `PROFILE_HELP_URL`.
    var helpURL: String
    /// `PROFILE_INVITE_URL`: the link shared by "Invite Friends".
    var inviteURL: String

    init(env: Environment) {
        termsURL = env.string(
            "PROFILE_TERMS_URL", default: "https://help.instagram.com/581066165581870")
        privacyURL = env.string(
            "PROFILE_PRIVACY_URL", default: "https://help.instagram.com/155833707900388")
        helpURL = env.string("PROFILE_HELP_URL", default: "https://help.instagram.com")
        inviteURL = env.string("PROFILE_INVITE_URL", default: "https://www.instagram.com")
    }

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
                            type: "share", text: "Follow me on Instagram: @\(user.username)", url: inviteURL)),
                    Item(
                        id: "save_original_posts", title: "Save Original Posts",
                        action: Action(type: "toggle", value: user.saveOriginalPosts)),
                ]),
            .init(
                title: "",
                items: [
                    Item(
                        id: "terms_of_service", title: "Terms of Service",
                        action: Action(type: "open_url", url: termsURL)),
                    Item(
                        id: "privacy_policy", title: "Privacy Policy",
                        action: Action(type: "open_url", url: privacyURL)),
                    Item(
                        id: "help_feedback", title: "Help / Feedback",
                        action: Action(type: "open_url", url: helpURL)),
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
