import Foundation
import Messages
import Storage
import Wire

/// A report about to be filed (checked by `ReportRules`: a known target type and reason, a
/// comment of at most 1,000 characters or nil).
struct NewReport: Sendable {
    var id: String
    var reporterId: String
    /// `user`, `post` or `comment`.
    var targetType: String
    var targetId: String
    var reason: String
    var comment: String?
    /// Unix ms.
    var createdMs: Int64
}

/// What a moderation action still has to do outside the reports' transaction, kept in
/// `moderation_effects` until done (`ModerationEffects` does it).
struct ModerationEffect: Sendable, Equatable {
    enum Kind: String, Sendable {
        /// Delete post `targetId` as its owner `userId` would (`PostStore.delete`).
        case removePost = "remove_post"
        /// Delete comment `targetId` of post `postId` as its author `userId` would.
        case removeComment = "remove_comment"
        /// Suspend account `userId` (`auth.set_suspension`).
        case suspend
        /// Lift the suspension of account `userId`.
        case reinstate
    }
    var seq: Int64
    var kind: Kind
    var userId: String
    var targetId: String?
    var postId: String?
    var moderatorId: String
    /// Tries that failed so far.
    var attempts: Int
}

/// One entry of the moderation log (`moderation_actions`): who did what to which target, and when.
struct ModerationAction: Sendable, Equatable {
    var moderatorId: String
    /// `dismiss`, `remove_content`, `suspend_user` or `lift_suspension`.
    var action: String
    var targetType: String
    var targetId: String
    var targetOwnerId: String
    var note: String?
    /// RFC 3339.
    var at: String
}

/// Reports and the moderation log (`reports`, `moderation_actions`, `moderation_effects`:
/// `ReportSchema`): every statement on those tables.
protocol ReportStore: Sendable {
    /// Files `report`, or answers the reporter's open report on the same target (`created`
    /// false), in one transaction that reads the target and keeps its snapshot.
    /// - Parameter perHour: the most reports an account may file within an hour.
    /// - Throws: 404 `not_found` for an unknown target, or one hidden from the reporter (its owner
    ///   blocks them; for a comment, its author too); 403 `private_account` for a private
    ///   account's post or comment the reporter does not follow; 422 `cannot_report_self`; 429
    ///   `too_many_reports` with `retryAfter` (seconds until an hour-old report leaves the window).
    func create(_ report: NewReport, perHour: Int) async throws -> (report: Profile.Report, created: Bool)

    /// A page of the `open` (`resolved: false`) or resolved reports, oldest first, the cursor
    /// bound to `moderatorId`. - Throws: 400 `invalid_cursor`.
    func reports(resolved: Bool, moderatorId: String, page: PageRequest) async throws -> Page<Profile.Report>

    /// The report with `id`, or nil.
    func report(id: String) async throws -> Profile.Report?

    /// Resolves report `reportId` and every open report on its target with one logged action of
    /// `moderatorId`, emits `profile.report.resolved` for each that has a reporter, and queues
    /// the action's effects, in one transaction (on PostgreSQL under the target's advisory lock,
    /// so two moderators resolving reports of one target at once are ordered). A report already
    /// resolved is answered as it is, with no effect.
    /// - Returns: the report as resolved, the effects queued (none for `dismiss`, or when it was
    ///   resolved already), and whether this call resolved it.
    /// - Throws: 404 for an unknown report, 422 `action_not_applicable` for `remove_content` on
    ///   an account.
    func resolve(reportId: String, moderatorId: String, action: String, note: String?, nowMs: Int64) async throws
        -> (report: Profile.Report, effects: [ModerationEffect], resolvedNow: Bool)

    /// Logs a suspension (`suspend_user`) or its lifting (`lift_suspension`) of account `userId`
    /// by `moderatorId` and queues the call to AuthService, in one transaction.
    /// - Returns: the effect queued.
    func setSuspension(moderatorId: String, userId: String, suspended: Bool, nowMs: Int64) async throws
        -> ModerationEffect

    /// Effects due at `nowMs`, oldest first, at most `limit`.
    func dueEffects(nowMs: Int64, limit: Int) async throws -> [ModerationEffect]

    /// Removes a done effect (nothing when another run removed it first).
    func effectDone(seq: Int64) async throws

    /// Counts a failed try of an effect and makes it due again at `retryAtMs` (Unix ms).
    func effectFailed(seq: Int64, retryAtMs: Int64) async throws

    /// The open reports and the age of the oldest at `nowMs`.
    func stats(nowMs: Int64) async throws -> Profile.ReportStats.Reply

    /// The moderation log of a target, oldest first.
    func actions(targetType: String, targetId: String) async throws -> [ModerationAction]
}

/// `ReportStore` on a SQL `Database`, either engine.
struct SQLReportStore: ReportStore {
    let database: Database
    /// How long a queued effect waits before the background retry takes it, in ms: the handler
    /// that queued it tries it at once, and the retry is for when that failed or was cut short.
    var effectGraceMs: Int64 = 10_000

    /// One `reports` row with its resolution (`select`).
    struct ReportRow: RowDecodable {
        var seq: Int64
        var id: String
        var reporterId: String?
        var targetType: String
        var targetId: String
        var reason: String
        var comment: String?
        var snapshot: String
        var createdAt: String
        var resolved: Bool
        var onTarget: Int
        var action: String?
        var note: String?
        var at: String?

        init(row: Row) throws {
            seq = try row.int64("seq")
            id = try row.string("id")
            reporterId = try row.optionalString("reporter_id")
            targetType = try row.string("target_type")
            targetId = try row.string("target_id")
            reason = try row.string("reason")
            comment = try row.optionalString("comment")
            snapshot = try row.string("snapshot")
            createdAt = try row.string("created_at")
            resolved = try row.optionalInt64("resolution_seq") != nil
            onTarget = try row.int("on_target")
            action = try row.optionalString("action")
            note = try row.optionalString("note")
            at = try row.optionalString("at")
        }
    }

    /// Reports `r` with their resolution `a` and how many reports share their state on the target.
    static let select: SQL = """
        SELECT r.seq, r.id, r.reporter_id, r.target_type, r.target_id, r.reason, r.comment, r.snapshot, r.created_at,
            r.resolution_seq, a.action, a.note, a.at,
            CASE WHEN r.resolution_seq IS NULL
                THEN (SELECT COUNT(*) FROM reports o
                    WHERE o.target_type = r.target_type AND o.target_id = r.target_id AND o.resolution_seq IS NULL)
                ELSE (SELECT COUNT(*) FROM reports o WHERE o.resolution_seq = r.resolution_seq) END AS on_target
        FROM reports r LEFT JOIN moderation_actions a ON a.seq = r.resolution_seq
        """

    /// Builds `Report`s from rows; a reporter the replica no longer names (a deleted account) is null.
    static func render(_ rows: [ReportRow], on c: DatabaseConnection) throws -> [Profile.Report] {
        let reporters = try SQLProfileStore.records(ids: rows.compactMap(\.reporterId), on: c)
        return try rows.map { r in
            Profile.Report(
                id: r.id,
                target: .init(
                    type: r.targetType, id: r.targetId,
                    snapshot: try WireJSON.decode(Profile.Report.Snapshot.self, from: Array(r.snapshot.utf8))),
                reason: r.reason, comment: r.comment, reporter: r.reporterId.flatMap { reporters[$0]?.publicUser },
                reportsOnTarget: r.onTarget, status: r.resolved ? "resolved" : "open",
                resolution: r.action.map { .init(action: $0, note: r.note, at: r.at ?? "") }, createdAt: r.createdAt)
        }
    }

    static func byId(_ id: String, on c: DatabaseConnection) throws -> ReportRow? {
        try c.queryOne(ReportRow.self, "\(select) WHERE r.id = \(id)")
    }

    /// A transaction-level advisory lock on PostgreSQL (released at commit); nothing on SQLite,
    /// whose one writer orders transactions already. `space` names what is locked.
    static func lock(_ space: Int32, _ name: String, in tx: Transaction) throws {
        try tx.connection.execute(.postgresOnly("SELECT pg_advisory_xact_lock(\(space), \(fnv32(name)))"))
    }

    /// FNV-1a of `text`'s UTF-8, as an Int32: the same in every process (unlike `Hasher`).
    static func fnv32(_ text: String) -> Int32 {
        var hash: UInt32 = 0x811C_9DC5
        for byte in text.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return Int32(bitPattern: hash)
    }

    /// Lock spaces: a reporter's filings (the hourly count), a target's resolutions.
    static let reporterLock: Int32 = 0x5250
    static let targetLock: Int32 = 0x5254

    /// The target of a report as it is now: its owner, its post (a comment's) and its snapshot.
    /// - Throws: 404 when unknown or hidden from `reporterId`, 403 `private_account`.
    static func target(type: String, id: String, reporterId: String, on c: DatabaseConnection) throws
        -> (ownerId: String, postId: String?, snapshot: Profile.Report.Snapshot)
    {
        switch type {
        case "user":
            guard let user = try SQLProfileStore.records(ids: [id], on: c)[id] else { throw ServiceError.notFound("user") }
            // Someone who blocks the reporter does not exist for them; a private account's header is public.
            if try Visibility.access(viewer: reporterId, owner: id, on: c) == .hidden { throw ServiceError.notFound("user") }
            return (
                id, nil,
                .init(
                    ownerId: id, username: user.username, name: user.name, bio: user.bio,
                    profilePhotoURL: user.profilePhotoURL)
            )
        case "post":
            guard let post = try PostRecord.byId(id, on: c) else { throw ServiceError.notFound("post") }
            try Visibility.access(viewer: reporterId, owner: post.ownerId, on: c).requireReadable("post")
            let owner = try SQLProfileStore.records(ids: [post.ownerId], on: c)[post.ownerId]
            return (
                post.ownerId, post.id,
                .init(
                    ownerId: post.ownerId, username: owner?.username ?? "", postId: post.id, postType: post.postType,
                    caption: post.caption, mediaURL: post.mediaURL, thumbnailURL: post.thumbnailURL)
            )
        case "comment":
            guard
                let row = try c.queryOne(
                    """
                    SELECT c.user_id, c.text, p.id AS post_id, p.owner_id FROM comments c JOIN posts p ON p.seq = c.post_seq
                    WHERE c.id = \(id)
                    """)
            else { throw ServiceError.notFound("comment") }
            let authorId = try row.string("user_id")
            try Visibility.access(viewer: reporterId, owner: try row.string("owner_id"), on: c).requireReadable("comment")
            // A comment's author who blocks the reporter is left out of the comments they read.
            if authorId != reporterId, try Visibility.blocks(authorId, reporterId, on: c) {
                throw ServiceError.notFound("comment")
            }
            let author = try SQLProfileStore.records(ids: [authorId], on: c)[authorId]
            let postId = try row.string("post_id")
            return (
                authorId, postId,
                .init(ownerId: authorId, username: author?.username ?? "", postId: postId, text: try row.string("text"))
            )
        default:
            throw ServiceError.validation([
                FieldError(field: "target.type", .invalidField, message: "must be user, post or comment")
            ])
        }
    }

    func create(_ report: NewReport, perHour: Int) async throws -> (report: Profile.Report, created: Bool) {
        try await database.write { tx in
            let c = tx.connection
            try Self.lock(Self.reporterLock, report.reporterId, in: tx)
            let open: SQL = """
                SELECT id FROM reports WHERE reporter_id = \(report.reporterId) AND target_type = \(report.targetType)
                    AND target_id = \(report.targetId) AND resolution_seq IS NULL
                """
            if let existing = try c.queryOne(open)?.string("id"), let row = try Self.byId(existing, on: c) {
                return (try Self.render([row], on: c)[0], false)
            }
            let target = try Self.target(
                type: report.targetType, id: report.targetId, reporterId: report.reporterId, on: c)
            guard target.ownerId != report.reporterId else {
                throw ServiceError.unprocessable(.cannotReportSelf, "you cannot report yourself or your own content")
            }
            let window: Int64 = 3_600_000
            let since = report.createdMs - window
            let recent =
                try c.scalar(
                    "SELECT COUNT(*) FROM reports WHERE reporter_id = \(report.reporterId) AND created_ms > \(since)") ?? 0
            if recent >= Int64(perHour) {
                // Until the perHour-th newest leaves the window, the count stays at the limit.
                let edge =
                    try c.scalar(
                        """
                        SELECT created_ms FROM reports WHERE reporter_id = \(report.reporterId) AND created_ms > \(since)
                        ORDER BY created_ms DESC LIMIT 1 OFFSET \(max(perHour - 1, 0))
                        """) ?? report.createdMs
                let seconds = max(1, Int((edge + window - report.createdMs + 999) / 1000))
                throw ServiceError(
                    .tooManyReports, message: "at most \(perHour) reports an hour", status: 429, retryAfter: seconds)
            }
            let snapshot = String(decoding: try WireJSON.encode(target.snapshot), as: UTF8.self)
            let inserted = try c.queryOne(
                """
                INSERT INTO reports(id, reporter_id, target_type, target_id, target_owner_id, target_post_id, reason, comment,
                    snapshot, created_at, created_ms)
                VALUES (\(report.id), \(report.reporterId), \(report.targetType), \(report.targetId), \(target.ownerId),
                    \(target.postId), \(report.reason), \(report.comment), \(snapshot),
                    \(Timestamp.format(ms: report.createdMs)), \(report.createdMs))
                ON CONFLICT DO NOTHING RETURNING seq
                """)
            // Another replica filed the same report since the check above: theirs is the one.
            let id = inserted == nil ? try c.queryOne(open)?.string("id") : report.id
            guard let id, let row = try Self.byId(id, on: c) else { throw WriteConflict(reason: "report \(report.id) raced") }
            return (try Self.render([row], on: c)[0], inserted != nil)
        }
    }

    func reports(resolved: Bool, moderatorId: String, page: PageRequest) async throws -> Page<Profile.Report> {
        let list = resolved ? "reports.resolved" : "reports.open"
        let after = try database.pageCursors.decode(page.cursor, list: list, owner: moderatorId) ?? 0
        let limit = page.clampedLimit
        return try await database.read { c in
            try c.snapshot {
                let state: SQL = resolved ? "r.resolution_seq IS NOT NULL" : "r.resolution_seq IS NULL"
                let rows = try c.query(
                    ReportRow.self, "\(Self.select) WHERE \(state) AND r.seq > \(after) ORDER BY r.seq LIMIT \(limit + 1)")
                let items = Array(rows.prefix(limit))
                return Page(
                    items: try Self.render(items, on: c),
                    nextCursor: rows.count > limit
                        ? items.last.map { database.pageCursors.encode(list: list, owner: moderatorId, key: $0.seq) } : nil)
            }
        }
    }

    func report(id: String) async throws -> Profile.Report? {
        try await database.read { c in try Self.byId(id, on: c).map { try Self.render([$0], on: c)[0] } }
    }

    func resolve(reportId: String, moderatorId: String, action: String, note: String?, nowMs: Int64) async throws
        -> (report: Profile.Report, effects: [ModerationEffect], resolvedNow: Bool)
    {
        let grace = effectGraceMs
        return try await database.write { tx in
            let c = tx.connection
            guard
                let first = try c.queryOne(
                    """
                    SELECT target_type, target_id, target_owner_id, target_post_id FROM reports WHERE id = \(reportId)
                    """)
            else { throw ServiceError.notFound("report") }
            let type = try first.string("target_type")
            let targetId = try first.string("target_id")
            let ownerId = try first.string("target_owner_id")
            let postId = try first.optionalString("target_post_id")
            // Resolutions of one target one at a time: the second reads the first's result.
            try Self.lock(Self.targetLock, "\(type):\(targetId)", in: tx)
            guard let row = try Self.byId(reportId, on: c) else { throw ServiceError.notFound("report") }
            if row.resolved { return (try Self.render([row], on: c)[0], [], false) }
            if action == "remove_content" && type == "user" {
                throw ServiceError.unprocessable(
                    .actionNotApplicable, "remove_content applies to a post or a comment; suspend_user acts on an account")
            }
            let actionSeq = try Self.log(
                ModerationAction(
                    moderatorId: moderatorId, action: action, targetType: type, targetId: targetId, targetOwnerId: ownerId,
                    note: note, at: Timestamp.format(ms: nowMs)),
                atMs: nowMs, on: c)
            try c.query(
                """
                UPDATE reports SET resolution_seq = \(actionSeq)
                WHERE target_type = \(type) AND target_id = \(targetId) AND resolution_seq IS NULL
                """)
            for r in try c.query(
                "SELECT id, reporter_id FROM reports WHERE resolution_seq = \(actionSeq) AND reporter_id IS NOT NULL ORDER BY seq"
            ) {
                try tx.emit(
                    Profile.ReportResolved(
                        reportId: try r.string("id"), reporterId: try r.string("reporter_id"), targetType: type, action: action))
            }
            var effects: [ModerationEffect] = []
            switch action {
            case "remove_content" where type == "post":
                effects.append(
                    try Self.queue(
                        .removePost, userId: ownerId, targetId: targetId, postId: targetId, moderatorId: moderatorId,
                        actionSeq: actionSeq, dueMs: nowMs + grace, on: c))
            case "remove_content" where type == "comment":
                effects.append(
                    try Self.queue(
                        .removeComment, userId: ownerId, targetId: targetId, postId: postId, moderatorId: moderatorId,
                        actionSeq: actionSeq, dueMs: nowMs + grace, on: c))
            case "suspend_user":
                effects.append(
                    try Self.queue(
                        .suspend, userId: ownerId, targetId: nil, postId: nil, moderatorId: moderatorId, actionSeq: actionSeq,
                        dueMs: nowMs + grace, on: c))
            default:
                break
            }
            guard let resolved = try Self.byId(reportId, on: c) else { throw ServiceError.internal("report vanished") }
            return (try Self.render([resolved], on: c)[0], effects, true)
        }
    }

    /// Writes a moderation log entry. - Returns: its seq.
    static func log(_ a: ModerationAction, atMs: Int64, on c: DatabaseConnection) throws -> Int64 {
        try c.insertReturning(
            """
            INSERT INTO moderation_actions(id, moderator_id, action, target_type, target_id, target_owner_id, note, at, at_ms)
            VALUES (\(RandomID.make()), \(a.moderatorId), \(a.action), \(a.targetType), \(a.targetId), \(a.targetOwnerId),
                \(a.note), \(a.at), \(atMs))
            RETURNING seq
            """)
    }

    /// Queues an effect of action `actionSeq`. - Returns: it.
    static func queue(
        _ kind: ModerationEffect.Kind, userId: String, targetId: String?, postId: String?, moderatorId: String,
        actionSeq: Int64, dueMs: Int64, on c: DatabaseConnection
    ) throws -> ModerationEffect {
        let seq = try c.insertReturning(
            """
            INSERT INTO moderation_effects(action_seq, kind, user_id, target_id, post_id, moderator_id, due_ms)
            VALUES (\(actionSeq), \(kind.rawValue), \(userId), \(targetId), \(postId), \(moderatorId), \(dueMs))
            RETURNING seq
            """)
        return ModerationEffect(
            seq: seq, kind: kind, userId: userId, targetId: targetId, postId: postId, moderatorId: moderatorId, attempts: 0)
    }

    func setSuspension(moderatorId: String, userId: String, suspended: Bool, nowMs: Int64) async throws
        -> ModerationEffect
    {
        let grace = effectGraceMs
        return try await database.write { tx in
            let actionSeq = try Self.log(
                ModerationAction(
                    moderatorId: moderatorId, action: suspended ? "suspend_user" : "lift_suspension", targetType: "user",
                    targetId: userId, targetOwnerId: userId, note: nil, at: Timestamp.format(ms: nowMs)),
                atMs: nowMs, on: tx.connection)
            return try Self.queue(
                suspended ? .suspend : .reinstate, userId: userId, targetId: nil, postId: nil, moderatorId: moderatorId,
                actionSeq: actionSeq, dueMs: nowMs + grace, on: tx.connection)
        }
    }

    func dueEffects(nowMs: Int64, limit: Int) async throws -> [ModerationEffect] {
        try await database.read { c in
            try c.query(
                """
                SELECT seq, kind, user_id, target_id, post_id, moderator_id, attempts FROM moderation_effects
                WHERE due_ms <= \(nowMs) ORDER BY seq LIMIT \(limit)
                """
            ).compactMap { r in
                // A kind this build does not know (a newer replica's) is left for that replica.
                guard let kind = ModerationEffect.Kind(rawValue: try r.string("kind")) else { return nil }
                return ModerationEffect(
                    seq: try r.int64("seq"), kind: kind, userId: try r.string("user_id"),
                    targetId: try r.optionalString("target_id"), postId: try r.optionalString("post_id"),
                    moderatorId: try r.string("moderator_id"), attempts: try r.int("attempts"))
            }
        }
    }

    func effectDone(seq: Int64) async throws {
        _ = try await database.write { tx in try tx.query("DELETE FROM moderation_effects WHERE seq = \(seq)") }
    }

    func effectFailed(seq: Int64, retryAtMs: Int64) async throws {
        _ = try await database.write { tx in
            try tx.query("UPDATE moderation_effects SET attempts = attempts + 1, due_ms = \(retryAtMs) WHERE seq = \(seq)")
        }
    }

    func stats(nowMs: Int64) async throws -> Profile.ReportStats.Reply {
        try await database.read { c in
            try c.snapshot {
                let open = try c.scalar("SELECT COUNT(*) FROM reports WHERE resolution_seq IS NULL") ?? 0
                let oldest = try c.scalar(
                    "SELECT created_ms FROM reports WHERE resolution_seq IS NULL ORDER BY seq LIMIT 1")
                return .init(
                    open: Int(open), oldestOpenAgeSeconds: oldest.map { Double(max(nowMs - $0, 0)) / 1000 } ?? 0)
            }
        }
    }

    func actions(targetType: String, targetId: String) async throws -> [ModerationAction] {
        try await database.read { c in
            try c.query(
                """
                SELECT moderator_id, action, target_type, target_id, target_owner_id, note, at FROM moderation_actions
                WHERE target_type = \(targetType) AND target_id = \(targetId) ORDER BY seq
                """
            ).map { r in
                ModerationAction(
                    moderatorId: try r.string("moderator_id"), action: try r.string("action"),
                    targetType: try r.string("target_type"), targetId: try r.string("target_id"),
                    targetOwnerId: try r.string("target_owner_id"), note: try r.optionalString("note"),
                    at: try r.string("at"))
            }
        }
    }

    /// Forgets the reporter of up to `limit` of the reports `userId` filed, in `tx` (API.md:
    /// "Reports the user filed stay, without the reporter"): a batch of the account's erasure
    /// (`AccountEraser`), found through `reports_by_reporter`.
    /// - Returns: how many reports, or nil when none names `userId` any more.
    /// - Throws: the engine's error.
    static func detachReporter(_ userId: String, limit: Int, in tx: Transaction) throws -> Int? {
        try tx.query(
            """
            UPDATE reports SET reporter_id = NULL WHERE seq IN
                (SELECT seq FROM reports WHERE reporter_id = \(userId) LIMIT \(limit))
            """)
        let n = tx.connection.changes
        return n > 0 ? n : nil
    }
}
