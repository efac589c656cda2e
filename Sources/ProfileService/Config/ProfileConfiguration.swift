import Messages
import Support

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

    /// `PROFILE_MEDIA_DIR`: where uploads are kept (default `<DATA_DIR>/media`); replicas may share
    /// one volume (docs/media.md "Storage"). Nil here means the default.
    var mediaDirectory: String?
    /// `PROFILE_MEDIA_WORKERS`: uploads decoded and encoded at once, off the request loop (1...64,
    /// default 2); more wait their turn.
    var mediaWorkers = 2
    /// `PROFILE_MEDIA_QUEUE_LIMIT`: uploads that may wait for a worker (0...100,000, default 64);
    /// past it an upload gets 503 `busy` with `Retry-After`.
    var mediaQueueLimit = 64
    /// `PROFILE_MEDIA_GRACE_MS`: how long an upload no post or profile uses is kept, in ms (default
    /// 24 h), so an upload made for a post being composed is not lost.
    var mediaGraceMs: Int64 = 24 * 3_600_000
    /// `PROFILE_MEDIA_GC_DELAY_MS`: how long media stays after its last post or profile photo let
    /// go of it, in ms (default 60 s), so a reply that still names it can be followed.
    var mediaCollectDelayMs: Int64 = 60_000
    /// `PROFILE_MEDIA_GC_INTERVAL_MS`: how often the collector looks for due media, in ms (default
    /// 60 s; it also runs after each release).
    var mediaCollectIntervalMs = 60_000
    /// `PROFILE_IDEMPOTENCY_PURGE_INTERVAL_MS`: how often `Idempotency-Key` records older than
    /// 24 h are deleted, in ms (default 10 minutes; also once at start). Expired records are
    /// ignored before that; the purge only keeps the table small.
    var idempotencyPurgeIntervalMs = 600_000
    /// `PROFILE_ERASURE_BATCH`: most rows one transaction of a deleted account's erasure deletes
    /// (1...100,000, default 500), so no batch holds the write lock for long.
    var erasureBatch = 500
    /// `PROFILE_TEST_ERASURE_HOLD_FILE` (tests only; default none): the erasure waits between
    /// batches while this file holds a number no greater than the batches done (`TestHold`).
    var erasureHoldFile: String?
    /// `PROFILE_REPORTS_PER_HOUR`: reports one account may file within an hour (1...10,000,
    /// default 20); past it `POST /v1/reports` is 429 `too_many_reports` with `Retry-After`.
    var reportsPerHour = 20
    /// `PROFILE_TEST_CRASH_ON_CREATE_FILE` (tests only; default none): when a `profile.create`
    /// arrives and this file exists, the file is removed and the process exits at once (status
    /// 70), as if killed after AuthService made the account and before its profile existed.
    var crashOnCreateFile: String?

    /// `PROFILE_TEST_CRASH_AFTER_KEYED_WRITE_FILE` (tests only; default none): when a write with
    /// an `Idempotency-Key` has committed and this file exists, the file is removed and the
    /// process exits at once (status 70), as if killed between the commit and the reply.
    var crashAfterKeyedWriteFile: String?

    /// `MODERATION_WORDS_FILE`: the operator's word list (`WordList`); captions, comments, bios
    /// and names containing a listed term are refused with 422 `objectionable_content`. Unset:
    /// nothing is refused.
    var words = WordList.empty

    /// The defaults.
    init() {}

    /// - Throws: `ConfigurationError` naming a variable that is not a number in its range, or
    ///   `MODERATION_WORDS_FILE` when its file cannot be read or holds an unusable term.
    init(env: Environment) throws {
        termsURL = env.string("PROFILE_TERMS_URL", default: termsURL)
        privacyURL = env.string("PROFILE_PRIVACY_URL", default: privacyURL)
        helpURL = env.string("PROFILE_HELP_URL", default: helpURL)
        inviteURL = env.string("PROFILE_INVITE_URL", default: inviteURL)
        mediaDirectory = env.optionalString("PROFILE_MEDIA_DIR")
        mediaWorkers = try env.int("PROFILE_MEDIA_WORKERS", default: mediaWorkers, range: 1...64)
        mediaQueueLimit = try env.int("PROFILE_MEDIA_QUEUE_LIMIT", default: mediaQueueLimit, range: 0...100_000)
        mediaGraceMs = Int64(try env.int("PROFILE_MEDIA_GRACE_MS", default: Int(mediaGraceMs), range: 0...Int(Int32.max) * 1000))
        mediaCollectDelayMs = Int64(
            try env.int("PROFILE_MEDIA_GC_DELAY_MS", default: Int(mediaCollectDelayMs), range: 0...Int(Int32.max) * 1000))
        mediaCollectIntervalMs = try env.int(
            "PROFILE_MEDIA_GC_INTERVAL_MS", default: mediaCollectIntervalMs, range: 10...Int(Int32.max))
        idempotencyPurgeIntervalMs = try env.int(
            "PROFILE_IDEMPOTENCY_PURGE_INTERVAL_MS", default: idempotencyPurgeIntervalMs, range: 1_000...Int(Int32.max))
        erasureBatch = try env.int("PROFILE_ERASURE_BATCH", default: erasureBatch, range: 1...100_000)
        erasureHoldFile = env.optionalString("PROFILE_TEST_ERASURE_HOLD_FILE")
        reportsPerHour = try env.int("PROFILE_REPORTS_PER_HOUR", default: reportsPerHour, range: 1...10_000)
        crashOnCreateFile = env.optionalString("PROFILE_TEST_CRASH_ON_CREATE_FILE")
        crashAfterKeyedWriteFile = env.optionalString("PROFILE_TEST_CRASH_AFTER_KEYED_WRITE_FILE")
        words = try WordList(env: env)
    }
}
