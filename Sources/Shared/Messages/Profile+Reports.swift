import Wire

/// The vocabulary of reports and moderation (API.md "Account lifecycle and moderation"; App Review
/// Guideline 1.2: "a mechanism to report offensive content and timely responses to concerns").
/// Strings on the wire; ProfileService checks them (`ReportRules`).
public enum Moderation {
    /// What can be reported: `user`, `post`, `comment`.
    public static let targetTypes = ["user", "post", "comment"]
    /// Why: `spam`, `nudity`, `hate`, `harassment`, `violence`, `self_harm`, `illegal`, `other`.
    public static let reasons = ["spam", "nudity", "hate", "harassment", "violence", "self_harm", "illegal", "other"]
    /// How a moderator resolves a report: `dismiss`, `remove_content` (a post or a comment, as
    /// its owner would delete it), `suspend_user` (the target's owner).
    public static let actions = ["dismiss", "remove_content", "suspend_user"]
    /// The longest `comment` of a report and `note` of a resolution, in characters (extended
    /// grapheme clusters, as every text limit of the API).
    public static let maxCommentCharacters = 1_000
}

extension Profile {
    /// The API's `Report`: `{id, target: {type, id, snapshot}, reason, comment, reporter:
    /// PublicUser | null, reportsOnTarget, status: "open"|"resolved", resolution: {action, note,
    /// at} | null, createdAt}`.
    public struct Report: Codable, Sendable, Equatable {
        /// What was reported as it was when reported (API.md: "username and bio, caption and media
        /// URLs, comment text"), kept when the content is deleted or edited afterwards. Every
        /// member is present; those that do not apply to the target's type are null.
        public struct Snapshot: Codable, Sendable, Equatable {
            /// The account the content belongs to (for a `user`, the account itself).
            public var ownerId: String
            /// The owner's username then.
            public var username: String
            /// `user`: the display name, bio and profile photo URL then.
            public var name: String?
            public var bio: String?
            public var profilePhotoURL: String?
            /// `post`: its id; `comment`: the id of the post it is on.
            public var postId: String?
            /// `post`: `photo` or `video`, the caption and the media URLs then.
            public var postType: String?
            public var caption: String?
            public var mediaURL: String?
            public var thumbnailURL: String?
            /// `comment`: its text.
            public var text: String?
            public init(
                ownerId: String, username: String, name: String? = nil, bio: String? = nil,
                profilePhotoURL: String? = nil, postId: String? = nil, postType: String? = nil, caption: String? = nil,
                mediaURL: String? = nil, thumbnailURL: String? = nil, text: String? = nil
            ) {
                self.ownerId = ownerId
                self.username = username
                self.name = name
                self.bio = bio
                self.profilePhotoURL = profilePhotoURL
                self.postId = postId
                self.postType = postType
                self.caption = caption
                self.mediaURL = mediaURL
                self.thumbnailURL = thumbnailURL
                self.text = text
            }
        }

        /// `{type, id, snapshot}`: `type` is `user`, `post` or `comment`; `id` the account's,
        /// post's or comment's id.
        public struct Target: Codable, Sendable, Equatable {
            public var type: String
            public var id: String
            public var snapshot: Snapshot
            public init(type: String, id: String, snapshot: Snapshot) {
                self.type = type
                self.id = id
                self.snapshot = snapshot
            }
        }

        /// `{action, note, at}`: how a moderator resolved it (`dismiss`, `remove_content`,
        /// `suspend_user`), their note, and when (RFC 3339). Never names the moderator.
        public struct Resolution: Codable, Sendable, Equatable {
            public var action: String
            public var note: String?
            public var at: String
            public init(action: String, note: String?, at: String) {
                self.action = action
                self.note = note
                self.at = at
            }
        }

        public var id: String
        public var target: Target
        /// One of `Moderation.reasons`.
        public var reason: String
        /// The reporter's words (at most `Moderation.maxCommentCharacters`), or null.
        public var comment: String?
        /// Null once the reporter's account is deleted (its reports stay, without the reporter).
        public var reporter: PublicUser?
        /// For an open report, the open reports on the same target (this one included); for a
        /// resolved one, the reports its resolution resolved.
        public var reportsOnTarget: Int
        /// `open` or `resolved`.
        public var status: String
        public var resolution: Resolution?
        /// RFC 3339.
        public var createdAt: String
        public init(
            id: String, target: Target, reason: String, comment: String?, reporter: PublicUser?, reportsOnTarget: Int,
            status: String, resolution: Resolution?, createdAt: String
        ) {
            self.id = id
            self.target = target
            self.reason = reason
            self.comment = comment
            self.reporter = reporter
            self.reportsOnTarget = reportsOnTarget
            self.status = status
            self.resolution = resolution
            self.createdAt = createdAt
        }
    }

    /// Files a report (`POST /v1/reports`). The same reporter and target while that report is
    /// open answers it again (`created: false`, the gateway's 200), so a retry is harmless.
    /// Errors: 400 with `fields` (`target.type`, `reason`, `comment` over 1,000 characters), 404
    /// `not_found` for an unknown or deleted target (or one whose owner blocks the reporter), 403
    /// `private_account` for a private account's post or comment the reporter may not see, 422
    /// `cannot_report_self` for the reporter's own account or content, 429
    /// `too_many_reports` with `retryAfter` (seconds) past the per-account hourly limit
    /// (`PROFILE_REPORTS_PER_HOUR`).
    public enum CreateReport: RPC {
        public static let type = "profile.create_report"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var reporterId: String
            /// `user`, `post` or `comment`.
            public var targetType: String
            public var targetId: String
            public var reason: String
            public var comment: String?
            public init(reporterId: String, targetType: String, targetId: String, reason: String, comment: String?) {
                self.reporterId = reporterId
                self.targetType = targetType
                self.targetId = targetId
                self.reason = reason
                self.comment = comment
            }
        }
        public struct Reply: Codable, Sendable {
            public var report: Report
            /// False when the reporter's open report on the target was answered instead.
            public var created: Bool
            public init(report: Report, created: Bool) {
                self.report = report
                self.created = created
            }
        }
    }

    /// The reports for moderators (`GET /v1/moderation/reports`; the gateway checks the role
    /// with AuthService): `open` or `resolved` ones, oldest first. Errors: 400 `invalid_field`
    /// (`status`), 400 `invalid_cursor`.
    public enum ListReports: RPC {
        public static let type = "profile.list_reports"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            /// The moderator reading (the cursors are bound to them).
            public var moderatorId: String
            /// `open` or `resolved`.
            public var status: String
            public var page: PageRequest
            public init(moderatorId: String, status: String, page: PageRequest) {
                self.moderatorId = moderatorId
                self.status = status
                self.page = page
            }
        }
        public typealias Reply = Page<Report>
    }

    /// Resolves a report and every open report on the same target with it, in one transaction
    /// with the moderation log (`moderation_actions`) and a `profile.report.resolved` event per
    /// reporter; `remove_content` then deletes the post or comment through its owner's own
    /// delete path, `suspend_user` suspends the target's owner (`auth.set_suspension`), each
    /// retried from `moderation_effects` until done. A report already resolved (a second console,
    /// a retry) is answered as it is: the first resolution wins and nothing is done again.
    /// Errors: 404 for an unknown report, 400 `invalid_field` (`action`, `note` over 1,000
    /// characters), 422 `action_not_applicable` for `remove_content` on a user.
    public enum ResolveReport: RPC {
        public static let type = "profile.resolve_report"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var reportId: String
            public var moderatorId: String
            /// `dismiss`, `remove_content` or `suspend_user`.
            public var action: String
            public var note: String?
            public init(reportId: String, moderatorId: String, action: String, note: String?) {
                self.reportId = reportId
                self.moderatorId = moderatorId
                self.action = action
                self.note = note
            }
        }
        public typealias Reply = Report
    }

    /// Suspends the account named `username` or lifts its suspension for a moderator
    /// (`PUT`/`DELETE /v1/moderation/users/{username}/suspension`): logged in
    /// `moderation_actions`, then sent to AuthService (`auth.set_suspension`). Answered once
    /// AuthService took it; when AuthService cannot be reached the change stays queued
    /// (`moderation_effects`) and is sent again until it is taken, and the error is answered.
    /// Reply: AuthService's (the account's state and its version, for `ApplyAccountState`).
    /// Errors: 404 for an unknown username (or an account AuthService no longer has);
    /// AuthService's 503/504.
    public enum SetSuspension: RPC {
        public static let type = "profile.set_suspension"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var moderatorId: String
            public var username: String
            public var suspended: Bool
            public init(moderatorId: String, username: String, suspended: Bool) {
                self.moderatorId = moderatorId
                self.username = username
                self.suspended = suspended
            }
        }
        public typealias Reply = Auth.SetSuspension.Reply
    }

    /// What `/metrics` shows of the moderation queue: the open reports and the age of the oldest,
    /// so an operator can alert before App Review's expected 24 hours pass.
    public enum ReportStats: RPC {
        public static let type = "profile.report_stats"
        public static let isIdempotent = true
        public typealias Request = Empty
        public struct Reply: Codable, Sendable, Equatable {
            /// Reports not resolved yet.
            public var open: Int
            /// Seconds since the oldest open report was filed (0 with none).
            public var oldestOpenAgeSeconds: Double
            public init(open: Int, oldestOpenAgeSeconds: Double) {
                self.open = open
                self.oldestOpenAgeSeconds = oldestOpenAgeSeconds
            }
        }
    }

    /// A report was resolved (one event per report that has a reporter): NotificationService
    /// tells the reporter with a `report_resolved` notification, never naming the moderator.
    public struct ReportResolved: Event {
        public static let type = "profile.report.resolved"
        public var reportId: String
        public var reporterId: String
        /// What was reported: `user`, `post` or `comment`.
        public var targetType: String
        /// `dismiss`, `remove_content` or `suspend_user`.
        public var action: String
        public init(reportId: String, reporterId: String, targetType: String, action: String) {
            self.reportId = reportId
            self.reporterId = reporterId
            self.targetType = targetType
            self.action = action
        }
    }
}
