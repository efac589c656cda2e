import BackendKit
import Messages
import Wire

/// Tells a reporter that a moderator resolved their report (API.md "Account lifecycle and
/// moderation"): ProfileService's `profile.report.resolved` → a `report_resolved` notification,
/// never grouped, pushed like any other (no preference turns it off). Its actor is the reporter
/// themself, so it names nobody and never the moderator; its text is fixed by the action
/// (`NotificationText.reportResolved`: "We removed the post you reported.", "We took action on
/// the account you reported.", "We reviewed your report."). One per report (its dedup key is
/// the report's id), applied in the subscriber's transaction with its cursor.
struct ReportEventHandlers: Sendable {
    let notifications: NotificationWriter

    func subscribe(_ subscriber: EventSubscriber) {
        let notifications = self.notifications
        subscriber.on(Profile.ReportResolved.self) { event, tx in
            let e = event.body
            try notifications.insert(
                NewNotification(
                    recipientId: e.reporterId, actorId: e.reporterId, type: .reportResolved, reportId: e.reportId,
                    detail: NotificationText.reportResolvedDetail(action: e.action, targetType: e.targetType), post: nil,
                    createdAt: ProfileEventHandlers.ms(event.header.time)),
                in: tx)
            return .applied
        }
    }
}
