import BackendKit
import Foundation

// ProfileService: profiles, posts, likes, comments, tags and settings (see `Profile` in Shared).
exit(await ServiceRunner.run(ProfileApp.self))
