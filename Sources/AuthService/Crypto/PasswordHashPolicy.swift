import CSodium

/// Which precomputed password hashes AuthService accepts from an import (`auth.import_users`):
/// libsodium argon2id PHC strings (`$argon2id$v=19$m=<KiB>,t=<passes>,p=1$<salt>$<hash>`) whose
/// cost is at least `PasswordHasher`'s (m = 19,456 KiB, t = 2: OWASP's argon2id minimum), so an
/// import never stores a weaker hash than a registration would, and at most what one login can
/// afford (`maxMemoryKiB`, `maxPasses`), so an import cannot make every login of its users a
/// denial of service.
enum PasswordHashPolicy {
    /// Least memory cost in KiB (`PasswordHasher.memLimit`).
    static let minMemoryKiB = PasswordHasher.memLimit / 1024
    /// Least time cost (`PasswordHasher.opsLimit`).
    static let minPasses = Int(PasswordHasher.opsLimit)
    /// Most memory cost in KiB (256 MiB).
    static let maxMemoryKiB = 256 * 1024
    /// Most time cost.
    static let maxPasses = 16

    /// Why `phc` is not acceptable, or nil when it is.
    ///
    /// Checked: libsodium can decode it as argon2id (`crypto_pwhash_argon2id_str_needs_rehash`
    /// is not -1: version 19, base64 salt and hash of valid lengths, shorter than
    /// `crypto_pwhash_STRBYTES`), one lane (libsodium verifies single-lane hashes), memory and
    /// time cost within the bounds above.
    static func problem(_ phc: String) -> String? {
        let bytes = Array(phc.utf8)
        guard bytes.count < crypto_pwhash_strbytes(), !bytes.contains(0) else {
            return "not a libsodium argon2id PHC string"
        }
        let decodes = phc.withCString {
            crypto_pwhash_argon2id_str_needs_rehash($0, UInt64(PasswordHasher.opsLimit), PasswordHasher.memLimit)
        }
        let parts = phc.split(separator: "$", omittingEmptySubsequences: false)
        guard decodes != -1, parts.count == 6, parts[0].isEmpty, parts[1] == "argon2id", parts[2] == "v=19" else {
            return "not a libsodium argon2id PHC string"
        }
        var parameters: [Substring: Int] = [:]
        for item in parts[3].split(separator: ",") {
            let pair = item.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, let value = Int(pair[1]) else { return "unreadable parameters \(parts[3])" }
            parameters[pair[0]] = value
        }
        guard let m = parameters["m"], let t = parameters["t"], let p = parameters["p"], parameters.count == 3 else {
            return "unreadable parameters \(parts[3])"
        }
        guard p == 1 else { return "p=\(p): only single-lane hashes (p=1) verify" }
        guard m >= minMemoryKiB, t >= minPasses else {
            return "m=\(m),t=\(t) is weaker than the policy (at least m=\(minMemoryKiB),t=\(minPasses))"
        }
        guard m <= maxMemoryKiB, t <= maxPasses else {
            return "m=\(m),t=\(t) costs more than a login can afford (at most m=\(maxMemoryKiB),t=\(maxPasses))"
        }
        return nil
    }
}
