import Wire

/// Where AuthService reads the time (Unix ms): the system clock, or a clock a test moves.
struct Clock: Sendable {
    let now: @Sendable () -> Int64

    static let system = Clock(now: { Timestamp.nowMs() })
}
