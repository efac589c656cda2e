/// A strict decoder of the chunked transfer coding (RFC 9112 §7.1), fed a request body's bytes
/// as they arrive:
///
///     chunked-body = *chunk last-chunk trailer-section CRLF
///     chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
///     last-chunk   = 1*("0") [ chunk-ext ] CRLF
///
/// http-parser (built without `HTTP_PARSER_STRICT`) takes any two bytes after chunk data for
/// its CRLF, so the bytes after a chunk could become the next request; it also reports a
/// chunk-size overflow as an invalid `Content-Length`, and merges trailer fields into the
/// request's headers. This decoder owns the body instead: anything the grammar does not allow
/// ends the request (the server answers 400 and closes), and the trailer section (§7.1.2) is
/// checked for syntax and dropped: a trailer never becomes a header.
struct ChunkedDecoder {
    /// What a `feed` call ended with.
    enum Outcome: Equatable {
        /// Every byte was taken; the body goes on in the next bytes.
        case needMore
        /// The body (trailer section included) ended after this many of the bytes fed; the rest
        /// belongs to whatever follows on the connection.
        case complete(consumed: Int)
        /// The bytes break the chunked grammar; the text says how (for a 400's detail).
        case invalid(String)
        /// The chunks announce more than `limit` bytes in all (413).
        case tooLarge
        /// The `data` callback refused a piece of the body.
        case refused
    }

    private enum State {
        case sizeStart
        case size
        case extensions
        case sizeLF
        case data
        case dataCR
        case dataLF
        case trailerLineStart
        case trailerName
        case trailerValue
        case trailerLF
        case finalLF
    }

    /// Largest body in bytes: the sum of the chunk sizes announced may not exceed it.
    let limit: Int
    /// Largest trailer section in bytes (RFC 9112 §7.1.2; its fields are dropped).
    let maxTrailerBytes: Int
    private var state = State.sizeStart
    private var chunkSize = 0
    private var remaining = 0
    private var total = 0
    private var trailerBytes = 0
    private var digits = 0
    private var inTrailer = false

    /// - Parameters:
    ///   - limit: the body limit in bytes (chunk sizes beyond it are `.tooLarge`).
    ///   - maxTrailerBytes: the trailer section's limit in bytes.
    init(limit: Int, maxTrailerBytes: Int) {
        self.limit = limit
        self.maxTrailerBytes = maxTrailerBytes
    }

    private static let tchar: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for b in "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8 {
            table[Int(b)] = true
        }
        return table
    }()

    /// A byte allowed in a chunk extension or a trailer field's value: HTAB, SP, VCHAR and
    /// obs-text (no other control character).
    private static func isFieldByte(_ b: UInt8) -> Bool { b == 0x09 || (b >= 0x20 && b != 0x7f) }

    private static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: Int(b - 0x30)
        case 0x41...0x46: Int(b - 0x41 + 10)
        case 0x61...0x66: Int(b - 0x61 + 10)
        default: nil
        }
    }

    /// Decodes `bytes`, handing each run of chunk data to `data` (false from it stops with
    /// `.refused`).
    mutating func feed(_ bytes: UnsafeRawBufferPointer, data: (UnsafeRawBufferPointer) -> Bool) -> Outcome {
        var i = 0
        let n = bytes.count
        while i < n {
            let b = bytes[i]
            switch state {
            case .sizeStart:
                guard let v = Self.hexValue(b) else { return .invalid("a chunk must start with its size in hex digits") }
                chunkSize = v
                digits = v == 0 ? 0 : 1  // significant digits: leading zeros are no overflow
                state = .size
            case .size:
                if let v = Self.hexValue(b) {
                    // 15 significant hex digits (60 bits) at most: no Int overflows below.
                    if chunkSize != 0 || v != 0 {
                        guard digits < 15 else { return .invalid("the chunk size is too large (overflow)") }
                        digits += 1
                    }
                    chunkSize = chunkSize << 4 | v
                } else if b == UInt8(ascii: ";") || b == 0x20 || b == 0x09 {
                    state = .extensions
                } else if b == 0x0d {
                    state = .sizeLF
                } else {
                    return .invalid("the chunk size is not hex digits followed by CRLF")
                }
            case .extensions:
                if b == 0x0d {
                    state = .sizeLF
                } else if !Self.isFieldByte(b) {
                    return .invalid("a chunk extension holds a control character")
                }
            case .sizeLF:
                guard b == 0x0a else { return .invalid("the chunk size line does not end with CRLF") }
                if chunkSize == 0 {
                    state = .trailerLineStart
                    inTrailer = true
                } else {
                    guard chunkSize <= limit - total else { return .tooLarge }
                    total += chunkSize
                    remaining = chunkSize
                    state = .data
                }
            case .data:
                let take = min(remaining, n - i)
                guard data(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + take)])) else { return .refused }
                remaining -= take
                i += take
                if remaining == 0 { state = .dataCR }
                continue
            case .dataCR:
                guard b == 0x0d else { return .invalid("the chunk data is not followed by CRLF") }
                state = .dataLF
            case .dataLF:
                guard b == 0x0a else { return .invalid("the chunk data is not followed by CRLF") }
                state = .sizeStart
            case .trailerLineStart:
                if b == 0x0d {
                    state = .finalLF
                } else if Self.tchar[Int(b)] {
                    state = .trailerName
                } else {
                    return .invalid("a trailer line is not a field (or folds a line)")
                }
            case .trailerName:
                if b == UInt8(ascii: ":") {
                    state = .trailerValue
                } else if !Self.tchar[Int(b)] {
                    return .invalid("a trailer field's name is not a token followed by a colon")
                }
            case .trailerValue:
                if b == 0x0d {
                    state = .trailerLF
                } else if !Self.isFieldByte(b) {
                    return .invalid("a trailer field's value holds a control character")
                }
            case .trailerLF:
                guard b == 0x0a else { return .invalid("a trailer line does not end with CRLF") }
                state = .trailerLineStart
            case .finalLF:
                guard b == 0x0a else { return .invalid("the chunked body does not end with CRLF") }
                return .complete(consumed: i + 1)
            }
            if inTrailer {
                trailerBytes += 1
                if trailerBytes > maxTrailerBytes { return .invalid("the trailer section is too large") }
            }
            i += 1
        }
        return .needMore
    }
}
