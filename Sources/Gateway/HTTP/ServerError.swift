/// A server start failure.
struct ServerError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
