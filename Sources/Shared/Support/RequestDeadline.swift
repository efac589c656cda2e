/// The deadline of the request being handled, as a task-local value.
///
/// `ServiceHost` sets it around each handler; `Database.write` reads it when the transaction
/// is queued and, if the deadline has passed by the time the writer queue reaches it, fails with
/// 504 `deadline_exceeded` instead of doing work whose caller has already given up. Under
/// overload this keeps the writer queue from spending minutes on requests nobody waits for.
public enum RequestDeadline {
    /// Absolute deadline in Unix ms, or nil outside a request (e.g. event delivery).
    @TaskLocal public static var current: Int64?
}
