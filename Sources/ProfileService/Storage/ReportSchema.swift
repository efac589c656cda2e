import Storage

/// The tables of reports and moderation (API.md "Account lifecycle and moderation"), the same on
/// both engines:
///
/// - `reports`: one row per report. `seq` orders the moderators' lists (oldest first) and makes
///   their cursors; `id` is the public random id. The target is `target_type` (`user`, `post`,
///   `comment`) and `target_id`, with its owner (`target_owner_id`: the account, the post's
///   owner, the comment's author) and, for a comment, its post (`target_post_id`): what
///   `remove_content` and `suspend_user` act on. `snapshot` is the JSON of
///   `Profile.Report.Snapshot`, taken when the report was filed and never changed.
///   `reporter_id` becomes NULL when the reporter's account is deleted (`detachReporter`).
///   `resolution_seq` is the `moderation_actions` row that resolved it (NULL while open).
///   `reports_open_once`, unique over the open reports of a (reporter, target), makes a repeat
///   while open answer the first; `reports_by_reporter` counts an account's reports of the last
///   hour (the rate limit).
/// - `moderation_actions`: every moderation action, kept: who (`moderator_id`), what (`action`:
///   `dismiss`, `remove_content`, `suspend_user`, `lift_suspension`; on `target_type`,
///   `target_id`, owned by `target_owner_id`), the moderator's `note`, and when (`at`, RFC 3339,
///   and `at_ms`).
/// - `moderation_effects`: what an action still has to do in another store or service (delete a
///   post or a comment through its owner's path, suspend or reinstate an account through
///   AuthService), written with the action and deleted once done; `due_ms` is when it is tried
///   next (`ModerationEffects`).
enum ReportSchema {
    static func migration(for id: String) -> Migration {
        let int = SQL.bigint
        let key = SQL.generatedKey
        return Migration(
            id,
            """
            CREATE TABLE reports(
                seq \(key),
                id TEXT NOT NULL UNIQUE,
                reporter_id TEXT,
                target_type TEXT NOT NULL,
                target_id TEXT NOT NULL,
                target_owner_id TEXT NOT NULL,
                target_post_id TEXT,
                reason TEXT NOT NULL,
                comment TEXT,
                snapshot TEXT NOT NULL,
                created_at TEXT NOT NULL,
                created_ms \(int) NOT NULL,
                resolution_seq \(int));
            CREATE UNIQUE INDEX reports_open_once ON reports(reporter_id, target_type, target_id)
                WHERE resolution_seq IS NULL;
            CREATE INDEX reports_open ON reports(seq) WHERE resolution_seq IS NULL;
            CREATE INDEX reports_open_by_target ON reports(target_type, target_id) WHERE resolution_seq IS NULL;
            CREATE INDEX reports_resolved ON reports(seq) WHERE resolution_seq IS NOT NULL;
            CREATE INDEX reports_by_resolution ON reports(resolution_seq) WHERE resolution_seq IS NOT NULL;
            CREATE INDEX reports_by_reporter ON reports(reporter_id, created_ms);
            CREATE TABLE moderation_actions(
                seq \(key),
                id TEXT NOT NULL UNIQUE,
                moderator_id TEXT NOT NULL,
                action TEXT NOT NULL,
                target_type TEXT NOT NULL,
                target_id TEXT NOT NULL,
                target_owner_id TEXT NOT NULL,
                note TEXT,
                at TEXT NOT NULL,
                at_ms \(int) NOT NULL);
            CREATE INDEX moderation_actions_by_target ON moderation_actions(target_type, target_id, seq);
            CREATE INDEX moderation_actions_by_moderator ON moderation_actions(moderator_id, seq);
            CREATE TABLE moderation_effects(
                seq \(key),
                action_seq \(int) NOT NULL,
                kind TEXT NOT NULL,
                user_id TEXT NOT NULL,
                target_id TEXT,
                post_id TEXT,
                moderator_id TEXT NOT NULL,
                attempts \(int) NOT NULL DEFAULT 0,
                due_ms \(int) NOT NULL);
            CREATE INDEX moderation_effects_due ON moderation_effects(due_ms, seq);
            """)
    }
}
