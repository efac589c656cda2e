import BackendKit
import Foundation

// NotificationService: the follow graph and notifications (see `Notifications` in Shared).
exit(await ServiceRunner.run(NotificationApp.self))
