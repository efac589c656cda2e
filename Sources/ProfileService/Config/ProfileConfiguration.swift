import Shared

/// ProfileService settings from the environment, each defaulting to the seeds' value.
struct ProfileConfiguration: Sendable {
    /// `PROFILE_TERMS_URL`: the settings screen's "Terms of Service".
    var termsURL = "https://help.instagram.com/581066165581870"
    /// `PROFILE_PRIVACY_URL`: "Privacy Policy".
    var privacyURL = "https://help.instagram.com/155833707900388"
    /// `PROFILE_HELP_URL`: "Help / Feedback".
    var helpURL = "https://help.instagram.com"
    /// `PROFILE_INVITE_URL`: the link shared by "Invite Friends".
    var inviteURL = "https://www.instagram.com"

    /// The defaults.
    init() {}

    init(env: Environment) {
        termsURL = env.string("PROFILE_TERMS_URL", default: termsURL)
        privacyURL = env.string("PROFILE_PRIVACY_URL", default: privacyURL)
        helpURL = env.string("PROFILE_HELP_URL", default: helpURL)
        inviteURL = env.string("PROFILE_INVITE_URL", default: inviteURL)
    }
}
