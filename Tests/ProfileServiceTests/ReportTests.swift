import Foundation
import Harness
import Messages
import Storage
import Support
import TestSupport
import Testing
import Wire

@testable import ProfileService

/// Reports and moderation in process, on the store's engine (API.md "Account lifecycle and
/// moderation"): a report keeps its snapshot and answers again while open; oneself, unknown,
/// deleted and hidden targets; the hourly limit; a resolution resolves every open report on the
/// target once, whoever comes second (two `Database`s racing, as two replicas do), logs the
/// action and tells each reporter; `remove_content` through the owners' paths; `suspend_user`
/// through AuthService, retried when it cannot be reached; the lists, the stats.
@Suite struct ReportTests {
    /// Files a report through the registered handler.
    func report(
        _ f: ProfileFixture, _ reporter: Me, _ type: String, _ id: String, reason: String = "spam", comment: String? = nil
    ) async throws -> Profile.CreateReport.Reply {
        try await f.call(
            Profile.CreateReport.self,
            .init(reporterId: reporter.id, targetType: type, targetId: id, reason: reason, comment: comment))
    }

    func resolve(_ f: ProfileFixture, _ report: String, _ action: String, by moderator: Me, note: String? = nil)
        async throws -> Profile.Report
    {
        try await f.call(
            Profile.ResolveReport.self, .init(reportId: report, moderatorId: moderator.id, action: action, note: note))
    }

    /// Answers `auth.set_suspension` from the stand-in, recording each request; while `down`
    /// holds, with 503 as an unreachable AuthService would be seen.
    func answerSuspensions(_ f: ProfileFixture, down: Locked<Bool> = Locked(false)) -> Locked<[Auth.SetSuspension.Request]> {
        let received = Locked<[Auth.SetSuspension.Request]>([])
        f.auth.producer.host.on(Auth.SetSuspension.self) { request, _ in
            if down.withLock({ $0 }) { throw ServiceError.unavailable("auth") }
            received.withLock { $0.append(request) }
            return .init(state: request.suspended ? .suspended : .active, version: 2)
        }
        return received
    }

    @Test func aReportKeepsItsSnapshotAndIsAnsweredAgainWhileItIsOpen() async throws {
        let f = try await ProfileFixture()
        let (alice, bob, carol) = (try await f.register("alice"), try await f.register("bob"), try await f.register("carol"))
        let post = try await f.post(alice, caption: "<img src=x onerror=alert(1)>")
        let first = try await report(f, bob, "post", post.id, reason: "hate", comment: "  nasty  ")
        #expect(first.created && first.report.status == "open" && first.report.resolution == nil)
        #expect(first.report.reason == "hate" && first.report.comment == "nasty" && first.report.reporter?.id == bob.id)
        let snapshot = first.report.target.snapshot
        #expect(first.report.target.type == "post" && first.report.target.id == post.id)
        #expect(snapshot.ownerId == alice.id && snapshot.username == "alice" && snapshot.caption == post.caption)
        #expect(snapshot.mediaURL == post.mediaURL && snapshot.thumbnailURL == post.thumbnailURL && snapshot.postId == post.id)
        #expect(snapshot.bio == nil && snapshot.text == nil)
        // The same reporter and target while open: the same report, nothing new.
        let again = try await report(f, bob, "post", post.id, reason: "spam")
        #expect(!again.created && again.report.id == first.report.id && again.report.reason == "hate")
        let other = try await report(f, carol, "post", post.id)
        #expect(other.created && other.report.reportsOnTarget == 2)
        // The snapshot stays when the content goes.
        try await f.app.posts.posts.delete(id: post.id, by: alice.id)
        let kept = try await f.app.reports.reports.report(id: first.report.id)
        #expect(kept?.target.snapshot.caption == "<img src=x onerror=alert(1)>" && kept?.reportsOnTarget == 2)
        // An account's snapshot: username, name, bio, photo.
        _ = try await f.call(Profile.UpdateMe.self, .init(userId: alice.id, name: "Alice A", bio: "my bio"))
        let account = try await report(f, bob, "user", alice.id, reason: "harassment").report
        #expect(account.target.snapshot.username == "alice" && account.target.snapshot.bio == "my bio")
        #expect(account.target.snapshot.name == "Alice A" && account.target.snapshot.caption == nil)
        // A comment's: its text, author and post.
        let second = try await f.post(alice)
        let comment = try await f.app.engagement.addComment(.init(userId: carol.id, postId: second.id, text: "you suck"))
        let onComment = try await report(f, bob, "comment", comment.id).report
        #expect(onComment.target.snapshot.text == "you suck" && onComment.target.snapshot.ownerId == carol.id)
        #expect(onComment.target.snapshot.username == "carol" && onComment.target.snapshot.postId == second.id)
        let types = try await f.eventTypes().filter { $0.hasPrefix("profile.report") }
        #expect(types.isEmpty)  // filing tells nobody
    }

    @Test func oneselfUnknownDeletedAndHiddenTargetsAreRefused() async throws {
        let f = try await ProfileFixture()
        let (alice, bob, dave) = (try await f.register("alice"), try await f.register("bob"), try await f.register("dave"))
        let post = try await f.post(alice)
        let comment = try await f.app.engagement.addComment(.init(userId: bob.id, postId: post.id, text: "hi"))
        for (type, id, who) in [("user", alice.id, alice), ("post", post.id, alice), ("comment", comment.id, bob)] {
            let own = await serviceError { try await report(f, who, type, id) }
            #expect(own?.status == 422 && own?.code == "cannot_report_self", "\(type)")
        }
        for (type, id) in [("user", Me.unknown.id), ("post", "nope"), ("comment", "nope")] {
            #expect(await serviceError { try await report(f, bob, type, id) }?.status == 404, "\(type)")
        }
        // Deleted: the post, and with it its comments.
        try await f.app.posts.posts.delete(id: post.id, by: alice.id)
        #expect(await serviceError { try await report(f, bob, "post", post.id) }?.status == 404)
        #expect(await serviceError { try await report(f, dave, "comment", comment.id) }?.status == 404)
        // Someone who blocks the reporter does not exist for them; a private account's post is
        // its followers'.
        let hidden = try await f.post(alice)
        _ = try await f.database.write { tx in
            try Visibility.applyBlock(blocker: alice.id, blocked: dave.id, blocking: true, in: tx)
        }
        #expect(await serviceError { try await report(f, dave, "post", hidden.id) }?.status == 404)
        #expect(await serviceError { try await report(f, dave, "user", alice.id) }?.status == 404)
        _ = try await f.call(Profile.UpdateMe.self, .init(userId: alice.id, isPrivate: true))
        let closed = await serviceError { try await report(f, bob, "post", hidden.id) }
        #expect(closed?.status == 403 && closed?.code == "private_account")
        #expect(try await report(f, bob, "user", alice.id).created)  // a private account's header is public
        // Bad fields, every one named.
        let bad = await serviceError {
            try await f.call(
                Profile.CreateReport.self,
                .init(
                    reporterId: bob.id, targetType: "story", targetId: "", reason: "boring",
                    comment: String(repeating: "x", count: 1_001)))
        }
        #expect(Set(fieldCodes(bad).keys) == ["target.type", "target.id", "reason", "comment"])
        #expect(fieldCodes(bad)["comment"] == "too_long")
        // 1,000 characters pass (the account's open report is answered).
        #expect(try await report(f, bob, "user", alice.id, comment: String(repeating: "é", count: 1_000)).created == false)
    }

    @Test func pastTheHourlyLimitAReportIs429WithRetryAfter() async throws {
        var configuration = ProfileConfiguration()
        configuration.reportsPerHour = 3
        let f = try await ProfileFixture(configuration: configuration)
        let (alice, bob) = (try await f.register("alice"), try await f.register("bob"))
        var posts: [Profile.Post] = []
        for _ in 0..<4 { posts.append(try await f.post(alice)) }
        for post in posts.prefix(3) { #expect(try await report(f, bob, "post", post.id).created) }
        let limited = await serviceError { try await report(f, bob, "post", posts[3].id) }
        #expect(limited?.status == 429 && limited?.code == "too_many_reports")
        #expect((1...3_600).contains(limited?.retryAfter ?? 0))
        // An open report is still answered, and others may report.
        #expect(try await !report(f, bob, "post", posts[0].id).created)
        #expect(try await report(f, alice, "user", bob.id).created)
    }

    @Test func aResolutionResolvesEveryOpenReportOnTheTargetOnceAndTellsEachReporter() async throws {
        let f = try await ProfileFixture()
        let (alice, bob, carol, mod) = (
            try await f.register("alice"), try await f.register("bob"), try await f.register("carol"),
            try await f.register("mod")
        )
        let post = try await f.post(alice)
        let other = try await f.post(alice)
        let a = try await report(f, bob, "post", post.id).report
        let b = try await report(f, carol, "post", post.id).report
        let c = try await report(f, carol, "post", other.id).report
        let resolved = try await resolve(f, a.id, "dismiss", by: mod, note: "not spam")
        #expect(resolved.status == "resolved" && resolved.resolution?.action == "dismiss")
        #expect(resolved.resolution?.note == "not spam" && resolved.reportsOnTarget == 2)
        #expect(try await f.app.reports.reports.report(id: b.id)?.status == "resolved")
        #expect(try await f.app.reports.reports.report(id: c.id)?.status == "open")  // another target
        // A second resolution (a second console, a retry) gets the first; nothing more is done.
        let second = try await resolve(f, b.id, "remove_content", by: carol)
        #expect(second.resolution?.action == "dismiss" && second.resolution?.note == "not spam")
        #expect(try await f.call(Profile.GetPost.self, .init(viewerId: bob.id, postId: post.id)).id == post.id)
        let log = try await f.app.reports.reports.actions(targetType: "post", targetId: post.id)
        #expect(log.map(\.action) == ["dismiss"] && log.map(\.moderatorId) == [mod.id] && log.first?.note == "not spam")
        // One event per reporter, naming the action, never the moderator.
        let told = try await f.events(Profile.ReportResolved.self)
        #expect(Set(told.map(\.reporterId)) == [bob.id, carol.id] && Set(told.map(\.reportId)) == [a.id, b.id])
        #expect(told.allSatisfy { $0.action == "dismiss" && $0.targetType == "post" })
        let envelope = try await f.events().filter { $0.type == Profile.ReportResolved.type }.map {
            String(decoding: $0.envelope, as: UTF8.self)
        }
        #expect(envelope.allSatisfy { !$0.contains(mod.id) })
        // A new report on the target after its resolution is a new one.
        #expect(try await report(f, bob, "post", post.id).created)
        // Bad actions and notes; an account's content is not removed, it is suspended.
        let badAction = await serviceError { try await resolve(f, c.id, "ban", by: mod) }
        #expect(fieldCodes(badAction)["action"] == "invalid_field")
        let account = try await report(f, bob, "user", alice.id).report
        let notApplicable = await serviceError { try await resolve(f, account.id, "remove_content", by: mod) }
        #expect(notApplicable?.status == 422 && notApplicable?.code == "action_not_applicable")
        #expect(await serviceError { try await resolve(f, "nope", "dismiss", by: mod) }?.status == 404)
    }

    @Test func removingContentGoesThroughTheOwnersPaths() async throws {
        let f = try await ProfileFixture()
        let (alice, bob, mod) = (try await f.register("alice"), try await f.register("bob"), try await f.register("mod"))
        let post = try await f.post(alice, caption: "bad")
        _ = try await f.call(Profile.SetLike.self, .init(userId: bob.id, postId: post.id, liked: true))
        let onPost = try await report(f, bob, "post", post.id).report
        let removed = try await resolve(f, onPost.id, "remove_content", by: mod)
        #expect(removed.resolution?.action == "remove_content")
        #expect(
            await serviceError { try await f.call(Profile.GetPost.self, .init(viewerId: bob.id, postId: post.id)) }?.status == 404
        )
        // As its owner would delete it: the event NotificationService removes its notifications by.
        #expect(try await f.events(Profile.PostDeleted.self).map(\.postId) == [post.id])
        #expect(try await f.app.reports.reports.dueEffects(nowMs: Int64.max, limit: 10).isEmpty)
        #expect(try await f.app.reports.reports.report(id: onPost.id)?.target.snapshot.caption == "bad")
        // A comment: gone, and the post's count with it.
        let kept = try await f.post(alice)
        let comment = try await f.app.engagement.addComment(.init(userId: bob.id, postId: kept.id, text: "awful"))
        _ = try await f.app.engagement.addComment(.init(userId: alice.id, postId: kept.id, text: "fine"))
        let onComment = try await report(f, alice, "comment", comment.id).report
        _ = try await resolve(f, onComment.id, "remove_content", by: mod)
        let comments = try await f.call(Profile.ListComments.self, .init(postId: kept.id, page: .init(), viewerId: alice.id))
        #expect(comments.items.map(\.text) == ["fine"])
        #expect(try await f.call(Profile.GetPost.self, .init(viewerId: alice.id, postId: kept.id)).commentCount == 1)
        // Content its owner deleted meanwhile: the resolution stands, the effect finds nothing to do.
        let gone = try await f.post(alice)
        let late = try await report(f, bob, "post", gone.id).report
        try await f.app.posts.posts.delete(id: gone.id, by: alice.id)
        #expect(try await resolve(f, late.id, "remove_content", by: mod).status == "resolved")
        #expect(try await f.app.reports.reports.dueEffects(nowMs: Int64.max, limit: 10).isEmpty)
    }

    @Test func aSuspensionGoesToAuthServiceAndWaitsForItWhenItIsDown() async throws {
        let f = try await ProfileFixture()
        let (alice, bob, mod) = (try await f.register("alice"), try await f.register("bob"), try await f.register("mod"))
        let down = Locked(false)
        let received = answerSuspensions(f, down: down)
        let comment = try await f.app.engagement.addComment(.init(userId: alice.id, postId: try await f.post(bob).id, text: "x"))
        let onComment = try await report(f, bob, "comment", comment.id).report
        // The owner of the target is suspended: the comment's author.
        _ = try await resolve(f, onComment.id, "suspend_user", by: mod)
        #expect(
            received.withLock { $0.map { [$0.userId, "\($0.suspended)", $0.moderatorId] } } == [[alice.id, "true", mod.id]])
        // Through the moderation route, by username: logged, sent, AuthService's answer returned.
        let lifted = try await f.call(
            Profile.SetSuspension.self, .init(moderatorId: mod.id, username: "ALICE", suspended: false))
        #expect(lifted.state == .active && received.withLock { $0.last?.suspended } == false)
        let log = try await f.app.reports.reports.actions(targetType: "user", targetId: alice.id)
        #expect(log.map(\.action) == ["lift_suspension"] && log.first?.moderatorId == mod.id)
        #expect(
            await serviceError {
                try await f.call(Profile.SetSuspension.self, .init(moderatorId: mod.id, username: "nobody", suspended: true))
            }?.status == 404)
        // AuthService down: the resolution is recorded and answered; the suspension waits in the
        // queue and is sent once AuthService answers again.
        down.withLock { $0 = true }
        let onUser = try await report(f, alice, "user", bob.id).report
        #expect(try await resolve(f, onUser.id, "suspend_user", by: mod).status == "resolved")
        let direct = await serviceError {
            try await f.call(Profile.SetSuspension.self, .init(moderatorId: mod.id, username: "bob", suspended: true))
        }
        #expect(direct?.status == 503)
        let waiting = try await f.app.reports.reports.dueEffects(nowMs: Int64.max, limit: 10)
        #expect(waiting.map(\.kind) == [.suspend, .suspend] && waiting.allSatisfy { $0.userId == bob.id && $0.attempts == 1 })
        down.withLock { $0 = false }
        #expect(await f.app.reports.effects.retryDue(nowMs: Int64.max) == 2)
        #expect(received.withLock { $0.filter { $0.userId == bob.id }.count } == 2)
        #expect(try await f.app.reports.reports.dueEffects(nowMs: Int64.max, limit: 10).isEmpty)
    }

    @Test func twoModeratorsResolvingAtOnceGetTheFirstResolution() async throws {
        let f = try await ProfileFixture()
        let (alice, bob, carol) = (try await f.register("alice"), try await f.register("bob"), try await f.register("carol"))
        let (m1, m2) = (try await f.register("mod1"), try await f.register("mod2"))
        // A second Database on the same store: on PostgreSQL a second replica's connections, whose
        // transactions really run at once (the target's advisory lock orders them).
        let second = try Database(
            location: try TestStorage.location(f.directory, "profile"), producer: "profile",
            migrations: ProfileSchema.migrations, legacy: ProfileSchema.legacy)
        let stores: [any ReportStore] = [f.app.reports.reports, SQLReportStore(database: second)]
        for round in 0..<5 {
            let post = try await f.post(alice)
            let first = try await report(f, bob, "post", post.id).report
            let other = try await report(f, carol, "post", post.id).report
            let answers = try await withThrowingTaskGroup(of: Profile.Report.self) { group in
                group.addTask {
                    try await stores[round % 2].resolve(
                        reportId: first.id, moderatorId: m1.id, action: "dismiss", note: nil, nowMs: Timestamp.nowMs()
                    ).report
                }
                group.addTask {
                    try await stores[(round + 1) % 2].resolve(
                        reportId: other.id, moderatorId: m2.id, action: "remove_content", note: nil, nowMs: Timestamp.nowMs()
                    ).report
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // Both consoles see one resolution; one action is logged, and only the winner's
            // effect is queued.
            let resolutions = Set(answers.map { $0.resolution?.action ?? "" })
            #expect(resolutions.count == 1 && answers.allSatisfy { $0.reportsOnTarget == 2 })
            let log = try await f.app.reports.reports.actions(targetType: "post", targetId: post.id)
            #expect(log.count == 1 && log.map(\.action) == Array(resolutions))
            let effects = try await f.app.reports.reports.dueEffects(nowMs: Int64.max, limit: 10).filter {
                $0.targetId == post.id
            }
            #expect(effects.count == (resolutions == ["remove_content"] ? 1 : 0))
            #expect(
                try await f.events(Profile.ReportResolved.self).filter { [first.id, other.id].contains($0.reportId) }.count == 2)
        }
    }

    @Test func moderatorsPageTheOpenAndResolvedReportsOldestFirst() async throws {
        let f = try await ProfileFixture()
        let (alice, bob, mod) = (try await f.register("alice"), try await f.register("bob"), try await f.register("mod"))
        var reports: [Profile.Report] = []
        for _ in 0..<5 { reports.append(try await report(f, bob, "post", try await f.post(alice).id).report) }
        let stats = try await f.call(Profile.ReportStats.self, Empty())
        #expect(stats.open == 5 && stats.oldestOpenAgeSeconds >= 0)
        _ = try await resolve(f, reports[1].id, "dismiss", by: mod)
        var seen: [String] = []
        var cursor: String? = nil
        repeat {
            let page = try await f.call(
                Profile.ListReports.self, .init(moderatorId: mod.id, status: "open", page: .init(limit: 2, cursor: cursor)))
            seen += page.items.map(\.id)
            cursor = page.nextCursor
        } while cursor != nil
        #expect(seen == [reports[0], reports[2], reports[3], reports[4]].map(\.id))
        let resolved = try await f.call(
            Profile.ListReports.self, .init(moderatorId: mod.id, status: "resolved", page: .init()))
        #expect(resolved.items.map(\.id) == [reports[1].id] && resolved.items[0].status == "resolved")
        #expect(try await f.call(Profile.ReportStats.self, Empty()).open == 4)
        let badStatus = await serviceError {
            try await f.call(Profile.ListReports.self, .init(moderatorId: mod.id, status: "all", page: .init()))
        }
        #expect(fieldCodes(badStatus)["status"] == "invalid_field")
        // A cursor is the moderator's own.
        let page = try await f.call(
            Profile.ListReports.self, .init(moderatorId: mod.id, status: "open", page: .init(limit: 1)))
        let foreign = await serviceError {
            try await f.call(
                Profile.ListReports.self,
                .init(moderatorId: bob.id, status: "open", page: .init(limit: 1, cursor: page.nextCursor)))
        }
        #expect(foreign?.code == "invalid_cursor")
        // A deleted reporter's reports stay, without the reporter.
        _ = try await f.database.write { tx in try SQLReportStore.detachReporter(bob.id, limit: 100, in: tx) }
        #expect(try await f.app.reports.reports.report(id: reports[0].id)?.reporter == nil)
    }
}
