/// The id of the request being handled, carried as the trace id of the service calls made for
/// it (so a request's log lines in every service share it).
enum RequestTrace {
    @TaskLocal static var id: String?
}
