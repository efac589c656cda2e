import Foundation
import Messages
import Support
import Wire

/// Runs ProfileService's keyed writes (`profile.create_post`, `profile.create_media_post`,
/// `profile.add_comment`, `profile.upload_media` with an `idempotencyKey`) at most once per user
/// and key within `IdempotencyKey.retentionMs`, as draft-ietf-httpapi-idempotency-key-header-07
/// describes ("Idempotency Enforcement Scenarios", "Error Scenarios"):
///
/// - a request whose key has a live record with the same fingerprint gets the recorded reply,
///   and nothing is written;
/// - with another fingerprint: 422 `idempotency_key_reused`;
/// - while a request with the key is being processed by this process: 409
///   `idempotency_key_in_use` (422 if its fingerprint differs). Across replicas, the record's
///   primary key settles it: the second write to commit finds the first's record, is rolled
///   back and answered 409 (`SQLIdempotencyStore.save`).
///
/// Only a write that succeeded is recorded (its record commits with it); a request that failed
/// stored nothing, so its key may be used again, with the same request or another.
final class IdempotentWrites: Sendable {
    let store: any IdempotencyStore
    /// The clock, ms since 1970 (tests move it).
    let nowMs: @Sendable () -> Int64

    private struct InFlight: Hashable {
        var userId: String
        var key: String
    }
    /// Keys being processed here, with their requests' fingerprints.
    private let inFlight = Locked<[InFlight: String]>([:])

    /// See `ProfileConfiguration.crashAfterKeyedWriteFile` (tests only).
    let crashAfterWriteFile: String?

    init(
        store: any IdempotencyStore, nowMs: @escaping @Sendable () -> Int64 = { Timestamp.nowMs() },
        crashAfterWriteFile: String? = nil
    ) {
        self.store = store
        self.nowMs = nowMs
        self.crashAfterWriteFile = crashAfterWriteFile
    }

    /// Runs `write` once for `userId`'s `key`, or answers from its record.
    /// - Parameters:
    ///   - key: the request's `idempotencyKey`; nil runs `write(nil)` and nothing else.
    ///   - fingerprint: the request's `RequestFingerprint`, computed only when there is a key.
    ///   - write: does the write; given a claim, it records its reply with `claim.save(_:on:)` in
    ///     the write's own transaction (or `store.save` once its effect is complete).
    /// - Returns: `write`'s reply, or the recorded one (decoded from its wire JSON).
    /// - Throws: 400 `invalid_field` for a key that is not 1–255 printable ASCII, 422
    ///   `idempotency_key_reused`, 409 `idempotency_key_in_use`, and whatever `write` throws.
    func run<Reply: Codable & Sendable>(
        userId: String, key: String?, fingerprint: () async throws -> String,
        write: (IdempotencyClaim?) async throws -> Reply
    ) async throws -> Reply {
        guard let key else { return try await write(nil) }
        if let problem = IdempotencyKey.problem(key) {
            throw ServiceError.badRequest(.invalidField, "\(problem.field): \(problem.message)", fields: [problem])
        }
        let claim = IdempotencyClaim(userId: userId, key: key, fingerprint: try await fingerprint(), nowMs: nowMs())
        let slot = InFlight(userId: userId, key: key)
        let running = inFlight.withLock { running -> String? in
            if let other = running[slot] { return other }
            running[slot] = claim.fingerprint
            return nil
        }
        if let running { throw running == claim.fingerprint ? Self.inUse() : Self.reused() }
        defer { inFlight.withLock { $0[slot] = nil } }
        if let record = try await store.record(userId: userId, key: key, nowMs: claim.nowMs) {
            guard record.fingerprint == claim.fingerprint else { throw Self.reused() }
            do { return try WireJSON.decode(Reply.self, from: Array(record.reply.utf8)) } catch {
                throw ServiceError.internal("the recorded reply to an Idempotency-Key does not decode: \(error)")
            }
        }
        let reply = try await write(claim)
        if let flag = crashAfterWriteFile, unlink(flag) == 0 { _exit(70) }  // committed, not answered
        return reply
    }

    /// 422 `idempotency_key_reused` (the draft's "Error Scenarios": a key reused with a
    /// different request payload).
    static func reused() -> ServiceError {
        ServiceError.unprocessable(
            .idempotencyKeyReused,
            "\(IdempotencyKey.headerName): this key was already used for a different request; use a new key")
    }

    /// 409 `idempotency_key_in_use` with `Retry-After: 1` (the draft's "Error Scenarios": a
    /// retry while the original request is still being processed).
    static func inUse() -> ServiceError {
        ServiceError(
            .idempotencyKeyInUse,
            message: "\(IdempotencyKey.headerName): a request with this key is still being processed; retry later",
            status: 409, retryAfter: 1)
    }
}
