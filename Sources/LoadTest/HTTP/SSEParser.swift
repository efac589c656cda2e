/// One Server-Sent Event: its `id`, `event` type and `data` (lines joined with "\n").
struct SSEEvent: Sendable {
    var id: String?
    var event: String?
    var data: String
}

/// An incremental Server-Sent Events parser (WHATWG HTML §9.2.6): feed it bytes as they
/// arrive, in any chunking; it calls back once per complete event. Comment lines are counted.
struct SSEParser {
    private var line: [UInt8] = []
    private var id: String?
    private var event: String?
    private var data: [String] = []
    private var lastWasCR = false
    /// Comment lines (`:` …) seen, e.g. keep-alives.
    private(set) var comments = 0

    /// Consumes `bytes`, calling `emit` for every event completed by them.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, emit: (SSEEvent) -> Void) {
        for b in bytes {
            if b == 10 && lastWasCR {
                lastWasCR = false
                continue
            }
            lastWasCR = b == 13
            if b == 10 || b == 13 {
                endLine(emit)
            } else {
                line.append(b)
            }
        }
    }

    private mutating func endLine(_ emit: (SSEEvent) -> Void) {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            if !data.isEmpty { emit(SSEEvent(id: id, event: event, data: data.joined(separator: "\n"))) }
            data.removeAll()
            event = nil
            return
        }
        if line[0] == UInt8(ascii: ":") {
            comments += 1
            return
        }
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let field = String(decoding: line[..<(colon ?? line.count)], as: UTF8.self)
        var value = ""
        if let c = colon {
            var start = c + 1
            if start < line.count && line[start] == UInt8(ascii: " ") { start += 1 }
            value = String(decoding: line[start...], as: UTF8.self)
        }
        switch field {
        case "id": id = value
        case "event": event = value
        case "data": data.append(value)
        default: break
        }
    }
}
