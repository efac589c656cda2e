import BackendKit
import Foundation

// AuthService: accounts, argon2id password hashes, sessions (see `Auth` in Shared).
exit(await ServiceRunner.run(AuthApp.self))
