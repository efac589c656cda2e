import CLibPQ

/// Results in PostgreSQL's text format read into `SQLValue`s by column type.
extension PostgresConnection {
    /// Type OIDs (pg_type.h): bool 16, bytea 17, int8 20, int2 21, int4 23, text 25, oid 26,
    /// float4 700, float8 701, numeric 1700.
    enum OID {
        static let bool: UInt32 = 16
        static let bytea: UInt32 = 17
        static let int8: UInt32 = 20
        static let int2: UInt32 = 21
        static let int4: UInt32 = 23
        static let text: UInt32 = 25
        static let oid: UInt32 = 26
        static let float4: UInt32 = 700
        static let float8: UInt32 = 701
        static let numeric: UInt32 = 1700
    }

    /// The value at (`row`, `column`) as `SQLValue`, by the column's type.
    func value(_ result: OpaquePointer, _ row: Int32, _ column: Int32) -> SQLValue {
        if PQgetisnull(result, row, column) != 0 { return .null }
        let raw = PQgetvalue(result, row, column)!
        let length = Int(PQgetlength(result, row, column))
        let bytes = UnsafeRawBufferPointer(start: raw, count: length)
        switch PQftype(result, column) {
        case OID.int8, OID.int4, OID.int2, OID.oid:
            return .int(Self.integer(bytes) ?? 0)
        case OID.float4, OID.float8:
            return .double(Double(String(decoding: bytes, as: UTF8.self)) ?? 0)
        case OID.numeric:
            if let n = Self.integer(bytes) { return .int(n) }
            return .double(Double(String(decoding: bytes, as: UTF8.self)) ?? 0)
        case OID.bool:
            return .int(length > 0 && bytes[0] == UInt8(ascii: "t") ? 1 : 0)
        case OID.bytea:
            return .blob(Self.hexBytea(bytes))
        default:
            return .text(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// A decimal integer in text (optional leading '-'), nil if it is not one or overflows.
    static func integer(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        guard !bytes.isEmpty else { return nil }
        var i = 0
        let negative = bytes[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        guard i < bytes.count else { return nil }
        var n: Int64 = 0
        while i < bytes.count {
            let d = bytes[i]
            guard (48...57).contains(d) else { return nil }
            let (m, o1) = n.multipliedReportingOverflow(by: 10)
            let (s, o2) = negative ? m.subtractingReportingOverflow(Int64(d - 48)) : m.addingReportingOverflow(Int64(d - 48))
            if o1 || o2 { return nil }
            n = s
            i += 1
        }
        return n
    }

    /// A `bytea` in the hex output format (`\x0a1b…`).
    static func hexBytea(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x") else { return Array(bytes) }
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: 0
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count - 2) / 2)
        var i = 2
        while i + 1 < bytes.count {
            out.append(nibble(bytes[i]) << 4 | nibble(bytes[i + 1]))
            i += 2
        }
        return out
    }

    func rows(_ result: OpaquePointer, limit: Int) -> [Row] {
        let count = min(Int(PQntuples(result)), limit)
        let width = PQnfields(result)
        guard count > 0 else { return [] }
        let names = ColumnNames((0..<width).map { String(cString: PQfname(result, $0)) })
        var out: [Row] = []
        out.reserveCapacity(count)
        for r in 0..<Int32(count) {
            out.append(Row(columns: names, values: (0..<width).map { value(result, r, $0) }))
        }
        return out
    }
}
