import Foundation
import Shared

// ProfileService: profiles, posts, likes, comments, tags and settings (see `Profile` in Shared).
exit(await ServiceRunner.run(ProfileApp.self))
