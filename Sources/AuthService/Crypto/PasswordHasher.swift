import CSodium
import Dispatch
import Support
import Wire

/// argon2id password hashing through libsodium, with bounded concurrency.
///
/// Parameters follow OWASP's Password Storage Cheat Sheet minimum for argon2id: m = 19 MiB,
/// t = 2, p = 1 (libsodium's argon2id is single-lane). Hashes are libsodium's PHC strings
/// (`$argon2id$v=19$m=19456,t=2,p=1$...`), which carry their own salt and parameters.
///
/// At most `concurrency` hashes run at once, on a dedicated dispatch queue (never on Swift's
/// cooperative pool, which they would starve); other callers wait in FIFO order, up to
/// `queueLimit` of them, after which the call fails with 503 `busy`.
final class PasswordHasher: Sendable {
    /// Passwords longer than this many UTF-8 bytes are rejected before hashing (1 KiB).
    static let maxPasswordBytes = 1024
    /// argon2id time cost (passes).
    static let opsLimit: UInt64 = 2
    /// argon2id memory cost in bytes (19 MiB).
    static let memLimit = 19 * 1024 * 1024

    private let slots: AsyncSemaphore
    private let queueLimit: Int
    private let concurrency: Int
    /// Moving average of one hash's duration in ms (starts from the dummy hash's).
    private let meanHashMs = Locked(50.0)
    private let queue = DispatchQueue(label: "auth.argon2id", attributes: .concurrent)
    /// A hash of a random password, verified against when the account does not exist so that an
    /// unknown user costs the same time as a wrong password.
    private let dummyHash: String

    /// Computes the dummy hash (one argon2id run, synchronously). Call after `sodium_init()`.
    /// - Parameter slots: the hashing slots (default: a new semaphore of `concurrency` permits);
    ///   tests pass one whose permits they hold, to put the hasher in a known state.
    /// - Throws: `ServiceError.internal` if libsodium cannot hash (out of memory).
    init(concurrency: Int, queueLimit: Int, slots: AsyncSemaphore? = nil) throws {
        self.slots = slots ?? AsyncSemaphore(permits: concurrency)
        self.queueLimit = queueLimit
        self.concurrency = max(1, concurrency)
        var random = [UInt8](repeating: 0, count: 32)
        randombytes_buf(&random, random.count)
        let started = Timestamp.nowMs()
        dummyHash = try Self.hashNow(random)
        meanHashMs.withLock { $0 = Double(max(1, Timestamp.nowMs() - started)) }
    }

    /// Hashes `password` (at most `maxPasswordBytes` UTF-8 bytes; the caller checks).
    /// - Parameter deadline: Unix ms after which the caller has given up (no hash is computed then).
    /// - Returns: the PHC string to store.
    /// - Throws: `ServiceError` 503 `busy` with `retryAfter` (queue full, or the caller's turn
    ///   would come after its deadline), 504 `deadline_exceeded`, 500.
    func hash(_ password: String, deadline: Int64) async throws -> String {
        let bytes = Array(password.utf8)
        return try await withSlot(deadline: deadline) { try Self.hashNow(bytes) }
    }

    /// Checks `password` against `stored`; with `stored` nil (no such account) it checks against
    /// the dummy hash and returns false, taking the same time.
    /// - Throws: `ServiceError` 503 `busy`, 504 `deadline_exceeded`.
    func verify(_ password: String, against stored: String?, deadline: Int64) async throws -> Bool {
        let bytes = Array(password.utf8)
        let hash = stored ?? dummyHash
        let matches = try await withSlot(deadline: deadline) { Self.verifyNow(bytes, hash) }
        return matches && stored != nil
    }

    /// Runs `work` on the hashing queue once a slot is free.
    private func withSlot<T: Sendable>(deadline: Int64, _ work: @escaping @Sendable () throws -> T)
        async throws -> T
    {
        // Admission: a caller whose turn would come after its deadline is refused at once with
        // 503 and Retry-After, instead of waiting in the queue only to time out (504).
        let mean = meanHashMs.withLock { $0 }
        let concurrency = self.concurrency
        let now = Timestamp.nowMs()
        let expectedWaitMs = Locked(0.0)
        let admitted = await slots.acquire(maxWaiting: queueLimit) { waiting in
            let wait = Double(waiting / concurrency + 1) * mean
            expectedWaitMs.withLock { $0 = wait }
            // A margin of half again, plus 50 ms for the reply's trip: hash times vary.
            return Double(now) + 1.5 * (wait + mean) + 50 <= Double(deadline)
        }
        guard admitted else {
            let seconds = max(1, Int((expectedWaitMs.withLock { $0 } / 1000).rounded(.up)))
            throw ServiceError(
                .busy, message: "too many password checks in progress", status: 503, retryAfter: seconds)
        }
        guard Timestamp.nowMs() < deadline else {
            await slots.release()
            throw ServiceError(
                .deadlineExceeded, message: "deadline passed while waiting to hash", status: 504)
        }
        let started = Timestamp.nowMs()
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { try work() }) }
        }
        let took = Double(max(1, Timestamp.nowMs() - started))
        meanHashMs.withLock { $0 = 0.8 * $0 + 0.2 * took }
        await slots.release()
        return try result.get()
    }

    /// One argon2id hash, blocking the calling thread (~tens of ms). Wipes its copy of the password.
    private static func hashNow(_ password: [UInt8]) throws -> String {
        var input = password + [0]  // never an empty buffer: a valid pointer even for ""
        defer { sodium_memzero(&input, input.count) }
        var out = [CChar](repeating: 0, count: crypto_pwhash_strbytes())
        let rc = input.withUnsafeBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { c in
                crypto_pwhash_str_alg(
                    &out, c.baseAddress!, UInt64(password.count), opsLimit, memLimit,
                    crypto_pwhash_alg_argon2id13())
            }
        }
        guard rc == 0 else { throw ServiceError.internal("password hashing failed") }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Verifies against a PHC string, blocking the calling thread. Wipes its copy of the password.
    private static func verifyNow(_ password: [UInt8], _ stored: String) -> Bool {
        var input = password + [0]
        defer { sodium_memzero(&input, input.count) }
        return stored.withCString { s in
            input.withUnsafeBufferPointer { p in
                p.withMemoryRebound(to: CChar.self) { c in
                    crypto_pwhash_str_verify(s, c.baseAddress!, UInt64(password.count)) == 0
                }
            }
        }
    }
}
