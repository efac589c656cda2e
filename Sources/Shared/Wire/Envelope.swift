/// Version of the envelope format. A receiver accepts this version; unknown fields are ignored,
/// so an older build reads a newer one's messages as long as the version stays.
public let wireVersion = 1

/// The fields of a request envelope except its body; decoded first to route the message.
///
/// JSON: `{"v": 1, "id": "<correlation id>", "type": "auth.login", "deadline": <unix ms>,
/// "trace": "<trace id>", "body": {...}}`.
public struct RequestHeader: Codable, Sendable, Equatable {
    /// Envelope version (`wireVersion`).
    public var v: Int
    /// Correlation id: echoed in the reply so the caller matches it to its request.
    public var id: String
    /// Message type, e.g. `auth.login`.
    public var type: String
    /// Absolute deadline in Unix milliseconds; past it the caller has given up.
    public var deadline: Int64
    /// Trace id carried through every hop of one client request.
    public var trace: String
}

extension RequestHeader {
    /// Reads the header from a parsed envelope's members directly, as the hosts do for every
    /// request (the Codable decoder's keyed container cost more than the members it read).
    /// - Returns: nil when a member is missing or of the wrong type, or `v` or `deadline` is not
    ///   an integer (no fraction or exponent) in range: what `WireJSON.decode` refuses too.
    public init?(_ envelope: JSONObject) {
        func string(_ name: String) -> String? {
            if case .string(let s)? = envelope[name] { return s }
            return nil
        }
        func integer(_ name: String) -> Int64? {
            guard case .number(let text)? = envelope[name] else { return nil }
            return Int64(text)
        }
        guard let v = integer("v"), let version = Int(exactly: v), let id = string("id"), let type = string("type"),
            let deadline = integer("deadline"), let trace = string("trace")
        else { return nil }
        self.init(v: version, id: id, type: type, deadline: deadline, trace: trace)
    }
}

/// A request envelope with its typed body. (Members are declared in alphabetical order, the
/// order the writer puts them in on the wire.)
public struct RequestEnvelope<Body: Codable & Sendable>: Codable, Sendable {
    public var body: Body
    public var deadline: Int64
    public var id: String
    public var trace: String
    public var type: String
    public var v: Int

    public init(id: String, type: String, deadline: Int64, trace: String, body: Body) {
        self.v = wireVersion
        self.id = id
        self.type = type
        self.deadline = deadline
        self.trace = trace
        self.body = body
    }
}

/// A reply envelope: the correlation id of its request and either a body or an error.
///
/// JSON: `{"v": 1, "id": "...", "type": "auth.login", "body": {...}}` or
/// `{"v": 1, "id": "...", "type": "auth.login", "error": {"code": "...", "message": "...", "status": 409}}`.
public struct ReplyEnvelope<Body: Codable & Sendable>: Codable, Sendable {
    public var body: Body?
    public var error: ServiceError?
    public var id: String
    public var type: String
    public var v: Int

    public init(id: String, type: String, body: Body?, error: ServiceError?) {
        self.v = wireVersion
        self.id = id
        self.type = type
        self.body = body
        self.error = error
    }
}

extension RequestEnvelope {
    /// The envelope's JSON: byte for byte what `WireJSON.encode(self)` writes (members sorted by
    /// name, the body first), with the body encoded by `JSONWriter` and the five other members
    /// written around it directly. Codable's keyed container for the envelope cost more than a
    /// small body itself (`scripts/bench json`, "request envelope").
    /// - Throws: `EncodingError` for a non-finite number in the body.
    public func encoded() throws -> [UInt8] {
        let bodyBytes = try WireJSON.encode(body)
        var out: [UInt8] = []
        out.reserveCapacity(bodyBytes.count + id.utf8.count + type.utf8.count + trace.utf8.count + 64)
        out += #"{"body":"#.utf8
        out += bodyBytes
        out += #","deadline":"#.utf8
        out += String(deadline).utf8
        out += #","id":"#.utf8
        JSONWriter.appendString(id, to: &out)
        out += #","trace":"#.utf8
        JSONWriter.appendString(trace, to: &out)
        out.append(UInt8(ascii: ","))
        appendEnvelopeEnd(type: type, v: v, to: &out)
        return out
    }
}

/// Writes the members every envelope ends with, `"type":"…","v":N}`, after the caller's comma.
private func appendEnvelopeEnd(type: String, v: Int, to out: inout [UInt8]) {
    out += #""type":"#.utf8
    JSONWriter.appendString(type, to: &out)
    out += #","v":"#.utf8
    out += String(v).utf8
    out.append(UInt8(ascii: "}"))
}

extension ReplyEnvelope {
    /// The envelope's JSON: byte for byte what `WireJSON.encode(self)` writes (members sorted by
    /// name, an absent body or error left out), with the body or error encoded by `JSONWriter`
    /// and the other members written around it directly (see `RequestEnvelope.encoded()`).
    /// - Throws: `EncodingError` for a non-finite number in the body.
    public func encoded() throws -> [UInt8] {
        let bodyBytes = try body.map { try WireJSON.encode($0) }
        let errorBytes = try error.map { try WireJSON.encode($0) }
        var out: [UInt8] = []
        out.reserveCapacity((bodyBytes?.count ?? 0) + (errorBytes?.count ?? 0) + id.utf8.count + type.utf8.count + 48)
        out.append(UInt8(ascii: "{"))
        if let bodyBytes {
            out += #""body":"#.utf8
            out += bodyBytes
            out.append(UInt8(ascii: ","))
        }
        if let errorBytes {
            out += #""error":"#.utf8
            out += errorBytes
            out.append(UInt8(ascii: ","))
        }
        out += #""id":"#.utf8
        JSONWriter.appendString(id, to: &out)
        out.append(UInt8(ascii: ","))
        appendEnvelopeEnd(type: type, v: v, to: &out)
        return out
    }
}

/// The fields of a reply except its body.
public struct ReplyHeader: Codable, Sendable {
    public var v: Int
    public var id: String
    public var type: String
    public var error: ServiceError?
}

/// A field-level validation error, as in the `errors` member of the API's problem details.
public struct FieldError: Codable, Sendable, Equatable {
    /// The offending field's name as the client sent it (camelCase), e.g. `email`.
    public var field: String
    /// Stable snake_case code, e.g. `invalid_email`.
    public var code: String
    /// Human-readable explanation.
    public var message: String

    public init(field: String, code: String, message: String) {
        self.field = field
        self.code = code
        self.message = message
    }
}

/// A typed error carried in a reply: a stable code, a message and the HTTP status the gateway
/// should answer with (RFC 9457 problem details are built from it).
public struct ServiceError: Error, Codable, Sendable, Equatable, CustomStringConvertible {
    /// Stable snake_case code, e.g. `username_taken`, `not_found`, `unknown_type`.
    public var code: String
    /// Per-field validation errors (status 400; and 422 `objectionable_content`, the word list).
    public var fields: [FieldError]?
    /// Human-readable message; never contains secrets.
    public var message: String
    /// Seconds after which a retry may succeed (status 429).
    public var retryAfter: Int?
    /// HTTP status for the gateway (400, 401, 403, 404, 409, 422, 429, 500, 503, 504).
    public var status: Int

    public init(code: String, message: String, status: Int, fields: [FieldError]? = nil, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.fields = fields
        self.retryAfter = retryAfter
    }

    public var description: String { "\(status) \(code): \(message)" }
}

/// The fields of an event envelope except its body.
///
/// Events travel as two frames `[topic, envelope]` where topic is the event type.
/// JSON: `{"v": 1, "producer": "auth", "seq": 42, "type": "auth.user.registered",
/// "time": "2026-11-29T18:04:50.123Z", "body": {...}}`. `seq` increases strictly per producer.
public struct EventHeader: Codable, Sendable, Equatable {
    public var v: Int
    /// The publishing service (`auth`, `profile`, `notification`).
    public var producer: String
    /// The producer's outbox sequence number: strictly increasing, never reused.
    public var seq: Int64
    /// Event type, also the topic frame.
    public var type: String
    /// When the state change was committed (RFC 3339).
    public var time: String
}

/// Reading values out of envelopes that `Outbox` wrote (sorted keys, no spaces) without parsing
/// them: what a subscriber needs from every event it receives.
public enum EnvelopeScan {
    /// Where the last occurrence of `marker` in `bytes` ends, or nil. The last one, because an
    /// envelope's top-level keys follow its body, and a body's nested object keys come first.
    public static func end(ofLast marker: [UInt8], in bytes: [UInt8]) -> Int? {
        guard !marker.isEmpty, bytes.count >= marker.count else { return nil }
        var i = bytes.count - marker.count
        while i >= 0 {
            if bytes[i] == marker[0] && bytes[i..<(i + marker.count)].elementsEqual(marker) { return i + marker.count }
            i -= 1
        }
        return nil
    }

    /// The JSON string value starting at `start` (just after its opening quote), read up to the
    /// closing quote, and the index after that quote; nil if it holds an escape (the caller
    /// decodes instead) or is not closed.
    public static func plainString(in bytes: [UInt8], from start: Int) -> (value: String, next: Int)? {
        guard start <= bytes.count, let end = bytes[start...].firstIndex(of: UInt8(ascii: "\"")),
            !bytes[start..<end].contains(UInt8(ascii: "\\"))
        else { return nil }
        return (String(decoding: bytes[start..<end], as: UTF8.self), end + 1)
    }
}

extension EventHeader {
    /// Reads the header from an envelope as `Outbox` writes it — sorted keys, the body first,
    /// then `,"producer":"…","seq":N,"time":"…","type":"…","v":N}` — without parsing the body.
    /// Returns nil for anything else (an escape in a string, other spacing or order), and the
    /// caller decodes the whole envelope instead. A subscriber reads every event's header, and
    /// a full JSON parse of each was a large share of a fan-out's CPU.
    public static func peek(_ envelope: [UInt8]) -> EventHeader? {
        guard envelope.last == UInt8(ascii: "}"),
            var p = EnvelopeScan.end(ofLast: Array(#","producer":""#.utf8), in: envelope)
        else { return nil }
        func string() -> String? {
            guard let (value, next) = EnvelopeScan.plainString(in: envelope, from: p) else { return nil }
            p = next
            return value
        }
        func literal(_ text: String) -> Bool {
            let bytes = Array(text.utf8)
            guard p + bytes.count <= envelope.count, envelope[p..<(p + bytes.count)].elementsEqual(bytes) else {
                return false
            }
            p += bytes.count
            return true
        }
        func integer() -> Int64? {
            var value: Int64 = 0
            let first = p
            while p < envelope.count, envelope[p] >= 48, envelope[p] <= 57, p - first < 18 {
                value = value * 10 + Int64(envelope[p] - 48)
                p += 1
            }
            return p > first ? value : nil
        }
        guard let producer = string(), literal(#","seq":"#), let seq = integer(), literal(#","time":""#),
            let time = string(), literal(#","type":""#), let type = string(), literal(#","v":"#),
            let v = integer(), p == envelope.count - 1
        else { return nil }
        return EventHeader(v: Int(v), producer: producer, seq: seq, type: type, time: time)
    }
}

/// An event envelope with its typed body.
public struct EventEnvelope<Body: Codable & Sendable>: Codable, Sendable {
    public var body: Body
    public var producer: String
    public var seq: Int64
    public var time: String
    public var type: String
    public var v: Int

    public init(producer: String, seq: Int64, type: String, time: String, body: Body) {
        self.v = wireVersion
        self.producer = producer
        self.seq = seq
        self.type = type
        self.time = time
        self.body = body
    }
}

/// An empty request or reply body (`{}`).
public struct Empty: Codable, Sendable, Equatable {
    public init() {}
}
