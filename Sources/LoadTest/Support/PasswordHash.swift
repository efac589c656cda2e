import CSodium

/// The load-test password's argon2id hash, computed once by LoadTest for a bulk import
/// (`auth.import_users` carries one PHC string for every user of a batch).
enum PasswordHash {
    /// argon2id time cost: AuthService's (`PasswordHasher.opsLimit`, OWASP's minimum).
    static let opsLimit: UInt64 = 2
    /// argon2id memory cost in bytes: AuthService's (19 MiB).
    static let memLimit = 19 * 1024 * 1024

    /// libsodium's PHC string of `password` (`$argon2id$v=19$m=19456,t=2,p=1$...`), fresh salt.
    /// - Throws: `LoadTestError` when libsodium cannot start or hash (out of memory).
    static func make(_ password: String) throws -> String {
        guard sodium_init() >= 0 else { throw LoadTestError("sodium_init failed") }
        var out = [CChar](repeating: 0, count: crypto_pwhash_strbytes())
        let rc = crypto_pwhash_str_alg(
            &out, password, UInt64(password.utf8.count), opsLimit, memLimit, crypto_pwhash_alg_argon2id13())
        guard rc == 0 else { throw LoadTestError("argon2id hashing failed") }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
