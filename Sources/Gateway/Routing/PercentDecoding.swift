/// Percent-decoding (RFC 3986 §2.1) that refuses invalid escapes and invalid UTF-8.
enum PercentDecoding {
    /// The decoded text, or nil when an escape is not `%` and two hex digits or the result is
    /// not UTF-8. With `plusIsSpace` (query strings, `application/x-www-form-urlencoded`) `+`
    /// means a space.
    static func decode(_ text: Substring, plusIsSpace: Bool) -> String? {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) || (plusIsSpace && bytes.contains(UInt8(ascii: "+"))) else {
            return String(text)
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        func hex(_ b: UInt8) -> UInt8? {
            switch b {
            case 0x30...0x39: b - 0x30
            case 0x41...0x46: b - 0x41 + 10
            case 0x61...0x66: b - 0x61 + 10
            default: nil
            }
        }
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "%") {
                guard i + 2 < bytes.count, let h = hex(bytes[i + 1]), let l = hex(bytes[i + 2]) else { return nil }
                out.append(h << 4 | l)
                i += 3
            } else {
                out.append(plusIsSpace && b == UInt8(ascii: "+") ? 0x20 : b)
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}
