import Foundation
import Harness
import Messages
import ServiceKit
import Storage
import Support
import TestSupport
import Testing

@testable import ProfileService

/// `SettingsHandlers` and `SettingsScreen` in-process: the seed's sections in order, URLs from
/// the configuration, a toggle stored per user.
@Suite struct SettingsHandlerTests {
    @Test func settingsHaveTheSeedsSectionsAndDefaultURLs() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let s = try await f.call(Profile.GetSettings.self, .init(userId: a.id))
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
        #expect(s.sections.allSatisfy { $0.title == "" })
        let items = Dictionary(uniqueKeysWithValues: s.sections.flatMap(\.items).map { ($0.id, $0.action) })
        #expect(items["edit_profile"] == .init(type: "edit_profile"))
        #expect(
            items["invite_friends"]
                == .init(type: "share", text: "Follow me on Instagram: @alice", url: "https://www.instagram.com"))
        #expect(items["save_original_posts"] == .init(type: "toggle", value: false))
        #expect(items["terms_of_service"] == .init(type: "open_url", url: "https://help.instagram.com/581066165581870"))
        #expect(items["privacy_policy"] == .init(type: "open_url", url: "https://help.instagram.com/155833707900388"))
        #expect(items["help_feedback"] == .init(type: "open_url", url: "https://help.instagram.com"))
        #expect(
            items["log_out"]
                == .init(type: "logout", confirmTitle: "Log Out", confirmMessage: "Are you sure you want to log out?"))
        #expect(await serviceError { try await f.call(Profile.GetSettings.self, .init(userId: "nope")) }?.status == 404)
        let update = await serviceError {
            try await f.call(Profile.UpdateSettings.self, .init(userId: "nope", saveOriginalPosts: true))
        }
        #expect(update?.status == 404)
    }

    @Test func saveOriginalPostsIsStoredPerUser() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let b = try await f.register("bob")
        let updated = try await f.call(Profile.UpdateSettings.self, .init(userId: a.id, saveOriginalPosts: true))
        #expect(updated.sections[0].items[2].action.value == true)
        // A second app on the same database file (a restart, in-process) reads it back.
        let reopened = try Database(
            location: try TestStorage.location(f.directory, "profile"), producer: "profile", migrations: ProfileSchema.migrations)
        let app = try ProfileApp(configuration: ProfileConfiguration(), database: reopened, auth: f.authClient)
        let store = SQLProfileStore(database: reopened, replica: app.replica)
        #expect(try await store.user(id: a.id)?.saveOriginalPosts == true)
        #expect(try await store.user(id: b.id)?.saveOriginalPosts == false)
        #expect(try await f.call(Profile.GetSettings.self, .init(userId: b.id)).sections[0].items[2].action.value == false)
        let off = try await f.call(Profile.UpdateSettings.self, .init(userId: a.id, saveOriginalPosts: false))
        #expect(off.sections[0].items[2].action.value == false)
        #expect(try await f.call(Profile.GetSettings.self, .init(userId: a.id)).sections[0].items[2].action.value == false)
        // A setting is private: nothing is published.
        #expect(try await f.eventTypes().isEmpty)
    }

    @Test func urlsComeFromTheConfiguration() async throws {
        let configuration = try ProfileConfiguration(
            env: Environment([
                "PROFILE_TERMS_URL": "https://example.com/terms", "PROFILE_PRIVACY_URL": "https://example.com/privacy",
                "PROFILE_HELP_URL": "https://example.com/help", "PROFILE_INVITE_URL": "https://example.com/invite",
            ]))
        let f = try await ProfileFixture(configuration: configuration)
        let a = try await f.register("alice")
        let s = try await f.call(Profile.GetSettings.self, .init(userId: a.id))
        #expect(
            s.sections[1].items.map(\.action.url) == [
                "https://example.com/terms", "https://example.com/privacy", "https://example.com/help",
            ])
        #expect(s.sections[0].items[1].action.url == "https://example.com/invite")
    }
}
