/// A request method (RFC 9110 §9). Methods are case-sensitive tokens: `get` is not `GET`, it is
/// `.other("get")`, which no route serves.
enum HTTPMethod: Hashable, Sendable, CustomStringConvertible {
    case get
    case head
    case post
    case put
    case patch
    case delete
    case options
    case connect
    /// Any other token, as sent (`PROPFIND`, `get`, ...).
    case other(String)

    /// The method named by `token` (exactly: methods are case-sensitive).
    init(_ token: String) {
        switch token {
        case "GET": self = .get
        case "HEAD": self = .head
        case "POST": self = .post
        case "PUT": self = .put
        case "PATCH": self = .patch
        case "DELETE": self = .delete
        case "OPTIONS": self = .options
        case "CONNECT": self = .connect
        default: self = .other(token)
        }
    }

    /// The method's token as sent on the wire (`GET`).
    var token: String {
        switch self {
        case .get: "GET"
        case .head: "HEAD"
        case .post: "POST"
        case .put: "PUT"
        case .patch: "PATCH"
        case .delete: "DELETE"
        case .options: "OPTIONS"
        case .connect: "CONNECT"
        case .other(let token): token
        }
    }

    var description: String { token }
}
