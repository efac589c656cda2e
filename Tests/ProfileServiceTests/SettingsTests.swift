import Foundation
import Shared
import TestSupport
import Testing

/// The settings screen: the seed's sections in order, configurable URLs, a persistent toggle.
@Suite struct SettingsTests {
    @Test func settingsHaveTheSeedsSectionsAndDefaultURLs() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice")
        let s = try await h.profile.call(Profile.GetSettings.self, .init(userId: a.id))
        #expect(
            s.sections.map { $0.items.map(\.id) } == [
                ["edit_profile", "invite_friends", "save_original_posts"],
                ["terms_of_service", "privacy_policy", "help_feedback"],
                ["log_out"],
            ])
        #expect(
            s.sections.map { $0.items.map(\.title) } == [
                ["Edit Profile", "Invite Friends", "Save Original Posts"],
                ["Terms of Service", "Privacy Policy", "Help / Feedback"],
                ["Log Out"],
            ])
        let items = Dictionary(uniqueKeysWithValues: s.sections.flatMap(\.items).map { ($0.id, $0.action) })
        #expect(items["edit_profile"] == .init(type: "edit_profile"))
        #expect(items["invite_friends"]?.type == "share" && items["invite_friends"]?.text?.contains("alice") == true)
        #expect(items["invite_friends"]?.url?.hasPrefix("https://") == true)
        #expect(items["save_original_posts"] == .init(type: "toggle", value: false))
        #expect(items["terms_of_service"] == .init(type: "open_url", url: "https://help.instagram.com/581066165581870"))
        #expect(items["privacy_policy"] == .init(type: "open_url", url: "https://help.instagram.com/155833707900388"))
        #expect(items["help_feedback"] == .init(type: "open_url", url: "https://help.instagram.com"))
        #expect(
            items["log_out"]
                == .init(type: "logout", confirmTitle: "Log Out", confirmMessage: "Are you sure you want to log out?"))
        #expect(await serviceError { try await h.profile.call(Profile.GetSettings.self, .init(userId: "nope")) }?.status == 404)
    }

    @Test func saveOriginalPostsPersistsPerUserAcrossRestarts() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice")
        let b = try await h.register("bob")
        let updated = try await h.profile.call(Profile.UpdateSettings.self, .init(userId: a.id, saveOriginalPosts: true))
        #expect(updated.sections[0].items[2].action.value == true)
        h.cluster.stop("profile")
        try await h.cluster.start("profile")
        try await waitUntilReachable(h.profile)
        #expect(try await h.profile.call(Profile.GetSettings.self, .init(userId: a.id)).sections[0].items[2].action.value == true)
        #expect(
            try await h.profile.call(Profile.GetSettings.self, .init(userId: b.id)).sections[0].items[2].action.value == false)
        let off = try await h.profile.call(Profile.UpdateSettings.self, .init(userId: a.id, saveOriginalPosts: false))
        #expect(off.sections[0].items[2].action.value == false)
    }

    @Test func urlsComeFromConfiguration() async throws {
        let h = try await ProfileHarness.start(environment: [
            "PROFILE_TERMS_URL": "https://example.com/terms", "PROFILE_PRIVACY_URL": "https://example.com/privacy",
            "PROFILE_HELP_URL": "https://example.com/help", "PROFILE_INVITE_URL": "https://example.com/invite",
        ])
        let a = try await h.register("alice")
        let s = try await h.profile.call(Profile.GetSettings.self, .init(userId: a.id))
        #expect(
            s.sections[1].items.map(\.action.url) == [
                "https://example.com/terms", "https://example.com/privacy", "https://example.com/help",
            ])
        #expect(s.sections[0].items[1].action.url == "https://example.com/invite")
    }
}
