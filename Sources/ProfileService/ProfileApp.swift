import BackendKit
import Foundation
import Media
import Messages
import ServiceKit
import Storage
import Support

/// ProfileService: profiles, posts, likes, comments, tags and settings; publishes `profile.*`
/// events; keeps a replica of AuthService's identities (`ServiceDescription.profile`:
/// `PROFILE_*` variables, ports 5553 / 5554).
struct ProfileApp: ServiceApp {
    static let description = ServiceDescription.profile
    static let migrations = ProfileSchema.migrations
    static let legacyMigrations = ProfileSchema.legacy

    let replica: IdentityReplica
    let profiles: ProfileHandlers
    let posts: PostHandlers
    let engagement: EngagementHandlers
    let settings: SettingsHandlers
    let media: MediaHandlers
    let idempotencyPurge: IdempotencyPurge
    let reports: ReportHandlers
    let accountStates: AccountStateHandlers
    let eraser: AccountEraser

    /// - Throws: `ConfigurationError` for a bad `PROFILE_*` value, `ZMQError` when AuthService's
    ///   endpoint is invalid, `MediaError` when the media directory cannot be made or libvips not
    ///   started.
    init(runtime: ServiceRuntime, database: Database) throws {
        var configuration = try ProfileConfiguration(env: runtime.env)
        if configuration.mediaDirectory == nil {
            configuration.mediaDirectory = FileMediaStore.defaultRoot(dataDirectory: try runtime.env.dataDirectory())
        }
        try self.init(
            configuration: configuration, database: database, auth: try runtime.client(for: .auth),
            logger: runtime.logger)
    }

    /// Builds the service (also what the in-process tests use; without a media directory, uploads
    /// go to a new temporary one).
    /// - Throws: `MediaError` when the media directory cannot be made or libvips not started.
    init(configuration: ProfileConfiguration, database: Database, auth: RPCClient, logger: Logger = Logger(service: "profile"))
        throws
    {
        let replica = SQLProfileStore.replica(database: database, auth: auth)
        let users = SQLProfileStore(
            database: database, replica: replica, mediaReleaseDelayMs: configuration.mediaCollectDelayMs)
        let postStore = SQLPostStore(database: database, mediaReleaseDelayMs: configuration.mediaCollectDelayMs)
        let engagementStore = SQLEngagementStore(database: database)
        let records = SQLMediaRecordStore(database: database)
        let root =
            configuration.mediaDirectory ?? "\(NSTemporaryDirectory())/profile-media"
        let files = try FileMediaStore(root: root)
        let collector = MediaCollector(
            records: records, files: files, graceMs: configuration.mediaGraceMs, delayMs: configuration.mediaCollectDelayMs,
            intervalMs: configuration.mediaCollectIntervalMs, logger: logger)
        let idempotency = SQLIdempotencyStore(database: database)
        let idempotent = IdempotentWrites(store: idempotency, crashAfterWriteFile: configuration.crashAfterKeyedWriteFile)
        self.replica = replica
        profiles = ProfileHandlers(
            users: users, posts: postStore, auth: auth, crashOnCreateFile: configuration.crashOnCreateFile,
            words: configuration.words)
        posts = PostHandlers(
            users: users, posts: postStore, idempotent: idempotent, released: { await collector.released() },
            words: configuration.words)
        engagement = EngagementHandlers(
            users: users, engagement: engagementStore, idempotent: idempotent, words: configuration.words)
        if !configuration.words.isEmpty {
            logger.info(
                "moderation.words", metadata: ["terms": "\(configuration.words.count)", "setting": WordList.variable])
        }
        settings = SettingsHandlers(users: users, screen: SettingsScreen(configuration: configuration))
        media = MediaHandlers(
            records: records, users: users, posts: posts, files: files, processor: try MediaProcessor(),
            processing: MediaWorkers(
                label: "profile.media.process", count: configuration.mediaWorkers,
                queueLimit: configuration.mediaQueueLimit),
            io: MediaWorkers(label: "profile.media.io", count: 8, queueLimit: 10_000), collector: collector,
            graceMs: configuration.mediaGraceMs, releaseDelayMs: configuration.mediaCollectDelayMs,
            idempotent: idempotent)
        idempotencyPurge = IdempotencyPurge(
            store: idempotency, intervalMs: configuration.idempotencyPurgeIntervalMs, logger: logger)
        let erasures = Doorbell()
        accountStates = AccountStateHandlers(database: database, erasures: erasures)
        eraser = AccountEraser(
            database: database, files: files, doorbell: erasures, batch: configuration.erasureBatch, intervalMs: 1_000,
            logger: logger, hold: TestHold(path: configuration.erasureHoldFile))
        let reportStore = SQLReportStore(database: database)
        let effects = ModerationEffects(
            reports: reportStore, posts: postStore,
            removeComment: { postId, commentId, authorId in
                // profile.delete_comment's path as the author: the count and the event (which
                // takes the comment's notification away).
                try await engagementStore.deleteComment(postId: postId, commentId: commentId, by: authorId)
            }, auth: auth, logger: logger, released: { await collector.released() })
        reports = ReportHandlers(
            users: users, reports: reportStore, effects: effects, reportsPerHour: configuration.reportsPerHour)
    }

    func register(on host: ServiceHost) {
        profiles.register(on: host)
        posts.register(on: host)
        engagement.register(on: host)
        settings.register(on: host)
        media.register(on: host)
        accountStates.register(on: host)
        reports.register(on: host)
    }

    func backgroundServices() -> [(name: String, service: any Service)] {
        [
            ("media.collector", media.collector), ("idempotency.purge", idempotencyPurge), ("account.eraser", eraser),
            ("moderation.effects", reports.effects),
        ]
    }

    func subscribe(_ events: EventSubscriptions) throws {
        try events.subscribe(to: .auth) { subscriber in
            replica.subscribe(subscriber)
            accountStates.subscribe(subscriber)
        }
        // The follow graph's pairs this service enforces (blocks, who may see a private account).
        try events.subscribe(to: .notification) { subscriber in
            Visibility.subscribe(subscriber)
            let erasures = accountStates.erasures
            EventRedaction.subscribe(subscriber) { erasures.ring() }
        }
    }
}
