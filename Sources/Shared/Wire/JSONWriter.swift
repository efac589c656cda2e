/// Encodes `Encodable` values to JSON bytes (RFC 8259) with the container semantics of
/// Foundation's `JSONEncoder` and every object's members sorted, without building Foundation's
/// tree of dictionaries (which was a large share of every request's CPU).
///
/// How it works: scalars and member names are rendered to one scratch buffer as they are
/// encoded; containers are nodes in a flat arena whose members are ranges of that buffer or
/// other nodes. Nothing is closed while an `encode(to:)` is still running, so every `Encoder`
/// pattern works as it does with `JSONEncoder`:
/// - a container stays open until the whole value is written: a write to a parent after a
///   nested container has been used goes to the parent;
/// - several `container(keyedBy:)` calls on one encoder (a subclass calling `super.encode(to:)`)
///   share one object;
/// - `superEncoder()` writes under the key `super`, `superEncoder(forKey:)` under its key, and an
///   unkeyed container's `superEncoder()` as its next element;
/// - a name written twice in one object keeps the last value;
/// - a value that encodes nothing is `{}`.
///
/// The bytes are assembled at the end: each object's members in ascending order of their names'
/// UTF-8 bytes, so the output does not depend on the order in which a type declares its members, and
/// the wire format's sorted-key promise (ARCHITECTURE.md, `EventHeader.peek`) holds.
///
/// `nulls` decides what an absent optional (`encodeIfPresent` with nil) becomes: `.explicit`
/// writes `null` (the API's shapes always carry every member), `.omitted` leaves the member out
/// (the wire format, as `JSONEncoder` does). An explicit `encodeNil` is `null` in both. Strings
/// escape `"`, `\` and control characters only (`/` and non-ASCII are written as is). Integral
/// doubles below 10^15 are written as integers; other numbers in Swift's shortest round-trip form.
/// Non-finite numbers are refused (`EncodingError.invalidValue`).
public enum JSONWriter {
    /// What an absent optional member becomes.
    public enum Nulls: Sendable {
        /// `null`.
        case explicit
        /// Left out.
        case omitted
    }

    /// The JSON bytes of `value`. - Throws: `EncodingError` for a non-finite number, or what the
    /// value's `encode(to:)` throws.
    public static func encode<T: Encodable>(_ value: T, nulls: Nulls = .explicit) throws -> [UInt8] {
        let tree = Tree(nulls: nulls)
        try value.encode(to: WriterEncoder(tree: tree, slot: Tree.rootSlot, codingPath: []))
        return tree.assemble()
    }

    /// Appends the JSON string literal for `s` to `out` (RFC 8259 §7: `"`, `\` and U+0000–U+001F
    /// escaped, everything else as UTF-8).
    public static func appendString(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { appendString(utf8: $0, to: &out) }
    }

    /// Appends the JSON string literal for the UTF-8 bytes `utf8` to `out`.
    static func appendString(utf8: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(0x22)
        var run = 0  // start of the bytes not yet copied
        for i in 0..<utf8.count {
            let b = utf8[i]
            guard b < 0x20 || b == 0x22 || b == 0x5c else { continue }
            if run < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<i])) }
            run = i + 1
            switch b {
            case 0x22: out += [0x5c, 0x22]
            case 0x5c: out += [0x5c, 0x5c]
            case 0x0a: out += [0x5c, 0x6e]
            case 0x0d: out += [0x5c, 0x72]
            case 0x09: out += [0x5c, 0x74]
            default: out += [0x5c, 0x75, 0x30, 0x30, hexDigits[Int(b >> 4)], hexDigits[Int(b & 0xf)]]
            }
        }
        if run < utf8.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...])) }
        out.append(0x22)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}

/// What a slot (the root, or one member or element) holds.
private struct Value {
    enum Kind: UInt8 {
        /// Nothing encoded yet (assembled as `{}`).
        case empty
        /// Bytes `a..<b` of the scratch buffer.
        case leaf
        /// Container node `a`.
        case object
        case array
    }
    var kind: Kind
    var a: Int32
    var b: Int32

    static let empty = Value(kind: .empty, a: 0, b: 0)
}

/// One member (its name's UTF-8 bytes are `nameStart..<nameEnd` of the scratch buffer) or element
/// (name `-1`), linked to the next in its container.
private struct Entry {
    var nameStart: Int32
    var nameEnd: Int32
    var value: Value
    var next: Int32
}

/// A container's entries as a linked list through `Tree.entries`.
private struct Node {
    var first: Int32 = -1
    var last: Int32 = -1
    var count: Int32 = 0
}

/// The state of one encoding: the scratch bytes, the container nodes and their entries. A struct
/// behind `Tree`'s one stored property, so an operation costs one exclusivity check, not one per
/// array it touches (those checks were the largest cost in a profile of the first version).
private struct Arena {
    let rootSlot: Int32 = Tree.rootSlot
    var scratch: [UInt8] = []
    var nodes: [Node] = []
    var entries: [Entry] = []
    var root = Value.empty

    init() {
        scratch.reserveCapacity(512)
        entries.reserveCapacity(16)
        nodes.reserveCapacity(4)
    }

    // MARK: Building

    func value(at slot: Int32) -> Value { slot == rootSlot ? root : entries[Int(slot)].value }

    mutating func set(_ slot: Int32, _ value: Value) {
        if slot == rootSlot { root = value } else { entries[Int(slot)].value = value }
    }

    /// The container of `kind` in `slot`: the one already there, or a new one.
    mutating func container(in slot: Int32, kind: Value.Kind) -> Int32 {
        let existing = value(at: slot)
        if existing.kind == kind { return existing.a }
        nodes.append(Node())
        let node = Int32(nodes.count - 1)
        set(slot, Value(kind: kind, a: node, b: 0))
        return node
    }

    /// Appends an entry to `node`: a member named `name`, or an element when nil.
    /// - Returns: the entry's slot, holding nothing yet.
    mutating func append(to node: Int32, name: String?) -> Int32 {
        var start: Int32 = -1
        var end: Int32 = -1
        if var name {
            start = Int32(scratch.count)
            name.withUTF8 { scratch.append(contentsOf: $0) }
            end = Int32(scratch.count)
        }
        let index = Int32(entries.count)
        entries.append(Entry(nameStart: start, nameEnd: end, value: .empty, next: -1))
        let n = Int(node)
        if nodes[n].last >= 0 { entries[Int(nodes[n].last)].next = index } else { nodes[n].first = index }
        nodes[n].last = index
        nodes[n].count += 1
        return index
    }

    /// Marks scratch bytes from `start` to the end as the value of `slot`.
    mutating func leaf(_ slot: Int32, from start: Int) {
        set(slot, Value(kind: .leaf, a: Int32(start), b: Int32(scratch.count)))
    }

    mutating func literal(_ s: StaticString, into slot: Int32) {
        let start = scratch.count
        s.withUTF8Buffer { scratch.append(contentsOf: $0) }
        leaf(slot, from: start)
    }

    mutating func string(_ s: String, into slot: Int32) {
        let start = scratch.count
        JSONWriter.appendString(s, to: &scratch)
        leaf(slot, from: start)
    }

    mutating func integer<I: BinaryInteger>(_ v: I, into slot: Int32) {
        let start = scratch.count
        if v >= 0, v < 10 {
            scratch.append(UInt8(48 + Int(v)))
        } else {
            scratch.append(contentsOf: String(v).utf8)
        }
        leaf(slot, from: start)
    }

    mutating func double(_ v: Double, into slot: Int32, path: [any CodingKey]) throws {
        guard v.isFinite else {
            throw EncodingError.invalidValue(v, .init(codingPath: path, debugDescription: "not a finite number"))
        }
        if v == v.rounded(), abs(v) < 1e15 {
            integer(Int64(v), into: slot)
        } else {
            let start = scratch.count
            scratch.append(contentsOf: v.description.utf8)
            leaf(slot, from: start)
        }
    }

    /// A `Float` in its own shortest form (`0.1`, not the `0.10000000149011612` of its widening;
    /// `-2.7950512e+10`, as `JSONEncoder` writes it, not the exact integer the float holds).
    mutating func float(_ v: Float, into slot: Int32, path: [any CodingKey]) throws {
        guard v.isFinite else {
            throw EncodingError.invalidValue(v, .init(codingPath: path, debugDescription: "not a finite number"))
        }
        let start = scratch.count
        var text = v.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        scratch.append(contentsOf: text.utf8)
        leaf(slot, from: start)
    }

    // MARK: Assembling

    func assemble() -> [UInt8] {
        var order: [Int32] = []
        var out: [UInt8] = []
        out.reserveCapacity(scratch.count + 2 * entries.count + 2)
        scratch.withUnsafeBufferPointer { bytes in
            write(root, bytes, &out, &order)
        }
        return out
    }

    private func write(_ value: Value, _ bytes: UnsafeBufferPointer<UInt8>, _ out: inout [UInt8], _ order: inout [Int32]) {
        switch value.kind {
        case .empty:
            out += [0x7b, 0x7d]
        case .leaf:
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[Int(value.a)..<Int(value.b)]))
        case .array:
            out.append(0x5b)
            var e = nodes[Int(value.a)].first
            var firstElement = true
            while e >= 0 {
                if !firstElement { out.append(0x2c) }
                firstElement = false
                let entry = entries[Int(e)]
                write(entry.value, bytes, &out, &order)
                e = entry.next
            }
            out.append(0x5d)
        case .object:
            writeObject(nodes[Int(value.a)], bytes, &out, &order)
        }
    }

    /// `order` holds the entry indices of the objects being assembled (a stack shared by the
    /// nesting levels).
    private func writeObject(
        _ node: Node, _ bytes: UnsafeBufferPointer<UInt8>, _ out: inout [UInt8], _ order: inout [Int32]
    ) {
        let base = order.count
        var e = node.first
        var sorted = true
        while e >= 0 {
            if sorted, order.count > base, !precedes(order[order.count - 1], e, bytes) { sorted = false }
            order.append(e)
            e = entries[Int(e)].next
        }
        let end = order.count
        if !sorted {
            // Ties (a name written twice) keep insertion order, so the later write comes last.
            order[base..<end].sort { a, b in
                let c = compareNames(a, b, bytes)
                return c != 0 ? c < 0 : a < b
            }
        }
        out.append(0x7b)
        var firstMember = true
        for i in base..<end {
            let index = order[i]
            // A name written twice: only its last value is kept.
            if !sorted, i + 1 < end, compareNames(index, order[i + 1], bytes) == 0 { continue }
            let entry = entries[Int(index)]
            if !firstMember { out.append(0x2c) }
            firstMember = false
            JSONWriter.appendString(
                utf8: UnsafeBufferPointer(rebasing: bytes[Int(entry.nameStart)..<Int(entry.nameEnd)]), to: &out)
            out.append(0x3a)
            write(entry.value, bytes, &out, &order)
        }
        out.append(0x7d)
        order.removeSubrange(base..<end)
    }

    /// Whether entry `a`'s name sorts strictly before entry `b`'s.
    private func precedes(_ a: Int32, _ b: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        compareNames(a, b, bytes) < 0
    }

    /// Compares two entries' names by their UTF-8 bytes.
    private func compareNames(_ a: Int32, _ b: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        let x = entries[Int(a)]
        let y = entries[Int(b)]
        let xs = Int(x.nameStart)
        let xn = Int(x.nameEnd) - xs
        let ys = Int(y.nameStart)
        let yn = Int(y.nameEnd) - ys
        var i = 0
        while i < xn, i < yn {
            let c = Int(bytes[xs + i]) - Int(bytes[ys + i])
            if c != 0 { return c }
            i += 1
        }
        return xn - yn
    }
}

/// The encoding's state shared by its encoders and containers.
private final class Tree {
    static let rootSlot: Int32 = -1
    let nulls: JSONWriter.Nulls
    var arena = Arena()

    init(nulls: JSONWriter.Nulls) { self.nulls = nulls }

    func container(in slot: Int32, kind: Value.Kind) -> Int32 { arena.container(in: slot, kind: kind) }
    func append(to node: Int32, name: String?) -> Int32 { arena.append(to: node, name: name) }
    func literal(_ s: StaticString, into slot: Int32) { arena.literal(s, into: slot) }
    func string(_ s: String, into slot: Int32) { arena.string(s, into: slot) }
    func integer<I: BinaryInteger>(_ v: I, into slot: Int32) { arena.integer(v, into: slot) }
    func double(_ v: Double, into slot: Int32, path: [any CodingKey]) throws { try arena.double(v, into: slot, path: path) }
    func float(_ v: Float, into slot: Int32, path: [any CodingKey]) throws { try arena.float(v, into: slot, path: path) }
    func assemble() -> [UInt8] { arena.assemble() }
}

private struct WriterEncoder: Encoder {
    let tree: Tree
    let slot: Int32
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(
            KeyedWriter<Key>(tree: tree, node: tree.container(in: slot, kind: .object), codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedWriter(tree: tree, node: tree.container(in: slot, kind: .array), codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleWriter(tree: tree, slot: slot, codingPath: codingPath)
    }
}

private struct KeyedWriter<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let tree: Tree
    let node: Int32
    var codingPath: [any CodingKey]

    private func slot(_ key: Key) -> Int32 { tree.append(to: node, name: key.stringValue) }

    mutating func encodeNil(forKey key: Key) throws { tree.literal("null", into: slot(key)) }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        value ? tree.literal("true", into: slot(key)) : tree.literal("false", into: slot(key))
    }
    mutating func encode(_ value: String, forKey key: Key) throws { tree.string(value, into: slot(key)) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        try tree.double(value, into: slot(key), path: codingPath + [key])
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        try tree.float(value, into: slot(key), path: codingPath + [key])
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { tree.integer(value, into: slot(key)) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { tree.integer(value, into: slot(key)) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { tree.integer(value, into: slot(key)) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { tree.integer(value, into: slot(key)) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { tree.integer(value, into: slot(key)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { tree.integer(value, into: slot(key)) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { tree.integer(value, into: slot(key)) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { tree.integer(value, into: slot(key)) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { tree.integer(value, into: slot(key)) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { tree.integer(value, into: slot(key)) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try value.encode(to: WriterEncoder(tree: tree, slot: slot(key), codingPath: codingPath + [key]))
    }

    // Absent optionals: `null` with `.explicit` (the default would leave the member out).
    private mutating func absent(_ key: Key) throws {
        if tree.nulls == .explicit { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try absent(key) }
    }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try absent(key) }
    }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try absent(key) }
    }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try absent(key) }
    }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try absent(key) }
    }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try absent(key) }
    }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try absent(key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        WriterEncoder(tree: tree, slot: slot(key), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        WriterEncoder(tree: tree, slot: slot(key), codingPath: codingPath + [key]).unkeyedContainer()
    }
    /// The encoder for the member `super` (as `JSONEncoder`).
    mutating func superEncoder() -> any Encoder {
        let key = SuperKey()
        return WriterEncoder(tree: tree, slot: tree.append(to: node, name: key.stringValue), codingPath: codingPath + [key])
    }
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        WriterEncoder(tree: tree, slot: slot(key), codingPath: codingPath + [key])
    }
}

/// The key `superEncoder()` writes under.
private struct SuperKey: CodingKey {
    var stringValue: String { "super" }
    var intValue: Int? { nil }
    init() {}
    init?(stringValue: String) { nil }
    init?(intValue: Int) { nil }
}

/// The coding path key of an array element.
private struct IndexKey: CodingKey {
    var index: Int
    var stringValue: String { "Index \(index)" }
    var intValue: Int? { index }
    init(_ index: Int) { self.index = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.index = intValue }
}

private struct UnkeyedWriter: UnkeyedEncodingContainer {
    let tree: Tree
    let node: Int32
    var codingPath: [any CodingKey]
    var count: Int { Int(tree.arena.nodes[Int(node)].count) }

    private func next() -> Int32 { tree.append(to: node, name: nil) }
    private var elementPath: [any CodingKey] { codingPath + [IndexKey(count)] }

    mutating func encodeNil() throws { tree.literal("null", into: next()) }
    mutating func encode(_ value: Bool) throws {
        value ? tree.literal("true", into: next()) : tree.literal("false", into: next())
    }
    mutating func encode(_ value: String) throws { tree.string(value, into: next()) }
    mutating func encode(_ value: Double) throws {
        let path = elementPath
        try tree.double(value, into: next(), path: path)
    }
    mutating func encode(_ value: Float) throws {
        let path = elementPath
        try tree.float(value, into: next(), path: path)
    }
    mutating func encode(_ value: Int) throws { tree.integer(value, into: next()) }
    mutating func encode(_ value: Int64) throws { tree.integer(value, into: next()) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        let path = elementPath
        try value.encode(to: WriterEncoder(tree: tree, slot: next(), codingPath: path))
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = elementPath
        return WriterEncoder(tree: tree, slot: next(), codingPath: path).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = elementPath
        return WriterEncoder(tree: tree, slot: next(), codingPath: path).unkeyedContainer()
    }
    /// The encoder for the next element (as `JSONEncoder`).
    mutating func superEncoder() -> any Encoder {
        let path = elementPath
        return WriterEncoder(tree: tree, slot: next(), codingPath: path)
    }
}

private struct SingleWriter: SingleValueEncodingContainer {
    let tree: Tree
    let slot: Int32
    var codingPath: [any CodingKey]

    mutating func encodeNil() throws { tree.literal("null", into: slot) }
    mutating func encode(_ value: Bool) throws { value ? tree.literal("true", into: slot) : tree.literal("false", into: slot) }
    mutating func encode(_ value: String) throws { tree.string(value, into: slot) }
    mutating func encode(_ value: Double) throws { try tree.double(value, into: slot, path: codingPath) }
    mutating func encode(_ value: Float) throws { try tree.float(value, into: slot, path: codingPath) }
    mutating func encode(_ value: Int) throws { tree.integer(value, into: slot) }
    mutating func encode(_ value: Int8) throws { tree.integer(value, into: slot) }
    mutating func encode(_ value: Int16) throws { tree.integer(value, into: slot) }
    mutating func encode(_ value: Int32) throws { tree.integer(value, into: slot) }
    mutating func encode(_ value: Int64) throws { tree.integer(value, into: slot) }
    mutating func encode(_ value: UInt) throws { tree.integer(value, into: slot) }
    mutating func encode(_ value: UInt8) throws { tree.integer(value, into: slot) }
    mutating func encode(_ value: UInt16) throws { tree.integer(value, into: slot) }
    mutating func encode(_ value: UInt32) throws { tree.integer(value, into: slot) }
    mutating func encode(_ value: UInt64) throws { tree.integer(value, into: slot) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try value.encode(to: WriterEncoder(tree: tree, slot: slot, codingPath: codingPath))
    }
}
