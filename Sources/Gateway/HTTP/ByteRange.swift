/// A `Range` header's one byte range (RFC 9110 §14.1.2).
enum ByteRange: Equatable {
    /// Not a single `bytes` range this server serves as a range (several ranges, another unit,
    /// bad syntax): the whole representation is sent.
    case ignored
    /// No byte of it is in the representation: 416.
    case unsatisfiable
    /// The byte offsets to send.
    case range(Range<Int>)

    /// Parses `bytes=first-last`, `bytes=first-` or `bytes=-suffix` against a representation
    /// of `size` bytes. A `last` past the end, however many digits it has, means up to the end,
    /// and so does a suffix longer than the representation (RFC 9110 §14.1.2); a `first` past
    /// the end is unsatisfiable.
    static func parse(_ header: String, size: Int) -> ByteRange {
        let text = header.trimmingOptionalWhitespace()
        guard text.lowercased().hasPrefix("bytes=") else { return .ignored }
        let spec = text.dropFirst(6).trimmingOptionalWhitespace()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .ignored }
        let first = spec[..<dash].trimmingOptionalWhitespace()
        let last = spec[spec.index(after: dash)...].trimmingOptionalWhitespace()
        /// Decimal digits (1*DIGIT), saturating at `Int.max`: a position too large for an Int
        /// is past the end of any representation, not a syntax error.
        func number(_ s: String) -> Int? {
            guard !s.isEmpty, s.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            return Int(s) ?? Int.max
        }
        if first.isEmpty {
            guard let suffix = number(last) else { return .ignored }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .range(max(0, size - suffix)..<size)
        }
        guard let start = number(first) else { return .ignored }
        var end = size - 1
        if !last.isEmpty {
            guard let e = number(last), e >= start else { return .ignored }
            end = min(e, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .range(start..<(end + 1))
    }
}
