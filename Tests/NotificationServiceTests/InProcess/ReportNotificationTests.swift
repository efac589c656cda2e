import Foundation
import Harness
import Messages
import Testing
import Wire

@testable import NotificationService

/// `profile.report.resolved` through a real `EventSubscriber` into a `report_resolved`
/// notification for the reporter (API.md "Account lifecycle and moderation"): its text fixed by
/// the action, naming nobody; the reporter its own actor; once per report; never grouped (the
/// singles' indexes, made again with type 8); counted in the badge.
struct ReportNotificationTests {
    @Test func aResolvedReportTellsTheReporterOnceWithATextThatNamesNobody() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let feed = try await ProfileFeed(into: s)
        defer { feed.stop() }
        let ids = try await s.users(["reporter", "other"])
        let (reporter, other) = (ids[0], ids[1])
        for (report, action, type) in [
            ("r1", "remove_content", "post"), ("r2", "suspend_user", "user"), ("r3", "dismiss", "comment"),
            ("r4", "remove_content", "comment"),
        ] {
            try await feed.emit(
                Profile.ReportResolved(reportId: report, reporterId: reporter.id, targetType: type, action: action))
        }
        // Applied again (a replay, a second resolution's event): nothing new.
        try await feed.emit(
            Profile.ReportResolved(reportId: "r1", reporterId: reporter.id, targetType: "post", action: "remove_content"))
        try await feed.emit(
            Profile.ReportResolved(reportId: "r5", reporterId: other.id, targetType: "post", action: "dismiss"))

        let notes = try await s.allNotifications(reporter)
        #expect(notes.map(\.seq) == [4, 3, 2, 1] && notes.allSatisfy { $0.type == .reportResolved })
        #expect(notes.allSatisfy { $0.actorId == reporter.id && $0.post == nil && $0.followState == nil && !$0.read })
        let texts = notes.map { NotificationText.render(type: $0.type, actorUsername: "reporter", detail: $0.detail) }
        #expect(
            texts == [
                "We removed the comment you reported.", "We reviewed your report.",
                "We took action on the account you reported.", "We removed the post you reported.",
            ])
        #expect(texts.allSatisfy { !$0.contains("reporter") })
        #expect(try await s.allNotifications(other).map(\.type) == [.reportResolved])
        // Never grouped: one group each, with the same text; all unread.
        let store = SQLNotificationStore(database: s.database)
        let groups = try await store.groups(recipientId: reporter.id, page: .init(limit: 10))
        #expect(
            groups.items.map(\.count) == [1, 1, 1, 1] && groups.items.map(\.type) == Array(repeating: .reportResolved, count: 4))
        let groupTexts = groups.items.map {
            NotificationText.renderGroup(type: $0.type, usernames: ["reporter"], count: $0.count, detail: $0.detail)
        }
        #expect(groupTexts == texts)
        #expect(groups.items.allSatisfy { $0.key.hasPrefix("report_resolved:") } && groups.unreadCount == 4)
        #expect(try await store.unreadCount(recipientId: reporter.id) == 4)
        // Delivered live too, to the reporter only.
        try await eventually("the four were published") {
            try await s.published().filter { $0.recipientId == reporter.id }.count == 4
        }
    }
}
