import Foundation
import Testing

@testable import Wire

/// `JSONWriter` against Foundation's `JSONEncoder`: the same values, hand-written `encode(to:)`
/// shapes and generated trees, compared after both outputs are parsed back by
/// `JSONSerialization`. Our output must also be strict JSON (our parser refuses duplicate names)
/// with every object's members in ascending UTF-8 order.
struct JSONWriterDifferentialTests {
    // MARK: Hand-written shapes (the ones the first writer got wrong)

    struct NestedThenParent: Encodable {
        enum K: String, CodingKey { case a, b, x }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: K.self)
            var inner = c.nestedContainer(keyedBy: K.self, forKey: .a)
            try inner.encode(1, forKey: .x)
            try c.encode(2, forKey: .b)
        }
    }

    struct TwoContainers: Encodable {
        enum K: String, CodingKey { case p, q }
        func encode(to encoder: any Encoder) throws {
            var first = encoder.container(keyedBy: K.self)
            try first.encode(1, forKey: .p)
            var second = encoder.container(keyedBy: K.self)
            try second.encode(2, forKey: .q)
        }
    }

    class Base: Encodable {
        enum K: String, CodingKey { case p }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: K.self)
            try c.encode(1, forKey: .p)
        }
    }

    final class Derived: Base {
        enum DK: String, CodingKey { case q }
        override func encode(to encoder: any Encoder) throws {
            try super.encode(to: encoder)
            var c = encoder.container(keyedBy: DK.self)
            try c.encode(2, forKey: .q)
        }
    }

    /// A subclass that keeps its parent's members under `super`, as Apple's documentation shows.
    final class DerivedWithSuperEncoder: Base {
        enum DK: String, CodingKey { case q, parent }
        override func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: DK.self)
            try c.encode(2, forKey: .q)
            try super.encode(to: c.superEncoder())
            try super.encode(to: c.superEncoder(forKey: .parent))
        }
    }

    struct KeyedInsideUnkeyed: Encodable {
        enum K: String, CodingKey { case x, y }
        func encode(to encoder: any Encoder) throws {
            var list = encoder.unkeyedContainer()
            try list.encode(1)
            var object = list.nestedContainer(keyedBy: K.self)
            try object.encode("in", forKey: .x)
            try list.encode(2)
            var inner = list.nestedUnkeyedContainer()
            try list.encode(3)
            try inner.encode(4)
            try object.encode("late", forKey: .y)
            try Base().encode(to: list.superEncoder())
            #expect(list.count == 6)
        }
    }

    struct LastWriteWins: Encodable {
        enum K: String, CodingKey { case a }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: K.self)
            try c.encode(1, forKey: .a)
            try c.encode("two", forKey: .a)
        }
    }

    struct Optionals: Encodable {
        enum K: String, CodingKey { case absent, explicitNull, present, nested }
        var absent: Int? = nil
        var present: String? = "here"
        var nested: [Int?] = [1, nil, 3]
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: K.self)
            try c.encodeIfPresent(absent, forKey: .absent)
            try c.encodeNil(forKey: .explicitNull)
            try c.encodeIfPresent(present, forKey: .present)
            try c.encode(nested, forKey: .nested)
        }
    }

    struct Text: Encodable {
        var plain = "plain"
        var controls = String((0..<32).map { Character(Unicode.Scalar(UInt8($0))) })
        var quotes = #"a "quoted" \ back\slash / slash"#
        var korean = "알림 좋아요 팔로우"
        var emoji = "👍🏽 e\u{301} \u{2028}\u{2029} \u{200B}\u{FEFF}"
    }

    struct Numbers: Encodable {
        var doubles: [Double] = [
            0, -0.0, 0.1, 1.5, -2.25, 1e15, 1e-7, 123_456.789, .leastNonzeroMagnitude, 1.7976931348623157e308, 1e21,
        ]
        var floats: [Float] = [0.1, 1.5, 3.4028235e38, .leastNonzeroMagnitude, -7.25]
        var ints: [Int64] = [0, -1, .max, .min]
        var uints: [UInt64] = [0, .max]
        var small: [Int8] = [.min, .max]
    }

    static var handWritten: [(String, any Encodable)] {
        [
            ("nested then parent", NestedThenParent()),
            ("two containers", TwoContainers()),
            ("super.encode(to:)", Derived()),
            ("superEncoder", DerivedWithSuperEncoder()),
            ("keyed inside unkeyed", KeyedInsideUnkeyed()),
            ("last write wins", LastWriteWins()),
            ("optionals", Optionals()),
            ("text", Text()),
            ("numbers", Numbers()),
        ]
    }

    @Test(arguments: 0..<handWritten.count)
    func handWrittenShapesMatchFoundation(_ index: Int) throws {
        let (name, value) = Self.handWritten[index]
        try Self.expectSameAsFoundation(value, name)
    }

    @Test func theShapesTheFirstWriterBrokeGiveTheseBytes() throws {
        func wire(_ value: some Encodable) throws -> String { String(decoding: try WireJSON.encode(value), as: UTF8.self) }
        #expect(try wire(NestedThenParent()) == #"{"a":{"x":1},"b":2}"#)
        #expect(try wire(TwoContainers()) == #"{"p":1,"q":2}"#)
        #expect(try wire(Derived()) == #"{"p":1,"q":2}"#)
        #expect(try wire(DerivedWithSuperEncoder()) == #"{"parent":{"p":1},"q":2,"super":{"p":1}}"#)
        #expect(try wire(KeyedInsideUnkeyed()) == #"[1,{"x":"in","y":"late"},2,[4],3,{"p":1}]"#)
        #expect(try wire(LastWriteWins()) == #"{"a":"two"}"#)
        #expect(try wire(Optionals()) == #"{"explicitNull":null,"nested":[1,null,3],"present":"here"}"#)
        #expect(
            String(decoding: try JSONWriter.encode(Optionals(), nulls: .explicit), as: UTF8.self)
                == #"{"absent":null,"explicitNull":null,"nested":[1,null,3],"present":"here"}"#)
    }

    // MARK: The order members are declared in does not show on the wire

    struct Forward: Encodable {
        var alpha = 1
        var beta = "b"
        var gamma: [Int] = [3]
        var delta: Bool? = true
    }
    struct Backward: Encodable {
        var delta: Bool? = true
        var gamma: [Int] = [3]
        var beta = "b"
        var alpha = 1
    }

    @Test func bytesDoNotDependOnDeclarationOrder() throws {
        #expect(try WireJSON.encode(Forward()) == WireJSON.encode(Backward()))
        #expect(try JSONWriter.encode(Forward()) == JSONWriter.encode(Backward()))
        #expect(
            String(decoding: try WireJSON.encode(Backward()), as: UTF8.self)
                == #"{"alpha":1,"beta":"b","delta":true,"gamma":[3]}"#)
    }

    // MARK: Generated trees

    /// A deterministic generator (SplitMix64), so a failure names a seed that reproduces it.
    struct SplitMix64: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ s: String) { stringValue = s }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// How a member or element is written: through `encode`, a nested container filled in place,
    /// or a super encoder.
    enum Route { case encode, nested, superEncoder }

    /// A JSON tree that encodes itself through every container pattern `Encoder` allows.
    indirect enum Shape: Encodable {
        case null
        case bool(Bool)
        case int(Int64)
        case uint(UInt64)
        case double(Double)
        case float(Float)
        case string(String)
        case optional(String?)
        /// Members, each with its route; a new `container(keyedBy:)` is asked for every `split` members.
        case object([(String, Shape, Route)], split: Int)
        case array([(Shape, Route)])

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .object(let members, let split):
                var c = encoder.container(keyedBy: Key.self)
                for (i, (name, value, route)) in members.enumerated() {
                    if split > 0, i > 0, i % split == 0 { c = encoder.container(keyedBy: Key.self) }
                    try value.write(into: &c, key: Key(name), route: route)
                }
            case .array(let elements):
                var c = encoder.unkeyedContainer()
                for (value, route) in elements { try value.write(into: &c, route: route) }
            default:
                var c = encoder.singleValueContainer()
                switch self {
                case .null: try c.encodeNil()
                case .bool(let v): try c.encode(v)
                case .int(let v): try c.encode(v)
                case .uint(let v): try c.encode(v)
                case .double(let v): try c.encode(v)
                case .float(let v): try c.encode(v)
                case .string(let v): try c.encode(v)
                case .optional(let v): try c.encode(v)
                case .object, .array: break
                }
            }
        }

        func write(into c: inout KeyedEncodingContainer<Key>, key: Key, route: Route) throws {
            switch (self, route) {
            case (.object(let members, _), .nested):
                var n = c.nestedContainer(keyedBy: Key.self, forKey: key)
                for (name, value, r) in members { try value.write(into: &n, key: Key(name), route: r) }
            case (.array(let elements), .nested):
                var n = c.nestedUnkeyedContainer(forKey: key)
                for (value, r) in elements { try value.write(into: &n, route: r) }
            case (.null, _): try c.encodeNil(forKey: key)
            case (.bool(let v), .encode): try c.encode(v, forKey: key)
            case (.int(let v), .encode): try c.encode(v, forKey: key)
            case (.string(let v), .encode): try c.encode(v, forKey: key)
            case (.double(let v), .encode): try c.encode(v, forKey: key)
            case (.float(let v), .encode): try c.encode(v, forKey: key)
            case (.optional(let v), .encode): try c.encodeIfPresent(v, forKey: key)
            case (_, .superEncoder): try encode(to: c.superEncoder(forKey: key))
            default: try c.encode(self, forKey: key)
            }
        }

        func write(into c: inout any UnkeyedEncodingContainer, route: Route) throws {
            switch (self, route) {
            case (.object(let members, _), .nested):
                var n = c.nestedContainer(keyedBy: Key.self)
                for (name, value, r) in members { try value.write(into: &n, key: Key(name), route: r) }
            case (.array(let elements), .nested):
                var n = c.nestedUnkeyedContainer()
                for (value, r) in elements { try value.write(into: &n, route: r) }
            case (.null, .encode): try c.encodeNil()
            case (.string(let v), .encode): try c.encode(v)
            case (.int(let v), .encode): try c.encode(v)
            case (.double(let v), .encode): try c.encode(v)
            case (_, .superEncoder): try encode(to: c.superEncoder())
            default: try c.encode(self)
            }
        }
    }

    static func name(_ g: inout SplitMix64) -> String {
        let alphabet: [String] = [
            "a", "b", "Z", "_", "0", "é", "e\u{301}", "알", "👍", " ", "\"", "\\", "\n", "\u{1}", "\u{7f}", "/",
        ]
        return (0..<Int.random(in: 1...6, using: &g)).map { _ in alphabet.randomElement(using: &g)! }.joined()
    }

    static func shape(_ g: inout SplitMix64, depth: Int) -> Shape {
        let routes: [Route] = [.encode, .encode, .nested, .superEncoder]
        switch Int.random(in: 0..<(depth < 4 ? 10 : 8), using: &g) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &g))
        case 2:
            return Bool.random(using: &g)
                ? .int(Int64.random(in: .min ... .max, using: &g)) : .uint(UInt64.random(in: 0 ... .max, using: &g))
        case 3:
            let special: [Double] = [0, -0.0, 0.1, 1e15, 1e-300, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 123.5]
            var d = Double(bitPattern: g.next())
            if !d.isFinite || Bool.random(using: &g) { d = special.randomElement(using: &g)! }
            return .double(d)
        case 4:
            var f = Float(bitPattern: UInt32(truncatingIfNeeded: g.next()))
            if !f.isFinite { f = 0.1 }
            return .float(f)
        case 5, 6: return .string(name(&g))
        case 7: return .optional(Bool.random(using: &g) ? name(&g) : nil)
        case 8:
            var seen = Set<String>()
            var members: [(String, Shape, Route)] = []
            for _ in 0..<Int.random(in: 0...6, using: &g) {
                let n = name(&g)
                guard seen.insert(n).inserted else { continue }
                members.append((n, shape(&g, depth: depth + 1), routes.randomElement(using: &g)!))
            }
            return .object(members, split: Int.random(in: 0...3, using: &g))
        default:
            return .array(
                (0..<Int.random(in: 0...6, using: &g)).map { _ in (shape(&g, depth: depth + 1), routes.randomElement(using: &g)!)
                })
        }
    }

    @Test func generatedTreesMatchFoundation() throws {
        for seed in UInt64(1)...400 {
            var g = SplitMix64(state: seed)
            let value = Shape.object(
                [("root", Self.shape(&g, depth: 0), .encode), ("more", Self.shape(&g, depth: 0), .nested)], split: 0)
            try Self.expectSameAsFoundation(value, "seed \(seed)")
        }
    }

    // MARK: Comparison

    static func expectSameAsFoundation(_ value: any Encodable, _ label: String) throws {
        let ours = try WireJSON.encode(value)
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys]
        let theirs = try foundation.encode(value)
        let a = try JSONSerialization.jsonObject(with: Data(ours), options: [.fragmentsAllowed])
        let b = try JSONSerialization.jsonObject(with: theirs, options: [.fragmentsAllowed])
        #expect(
            same(a, b),
            "\(label): ours \(String(decoding: ours, as: UTF8.self)) Foundation \(String(decoding: theirs, as: UTF8.self))")
        let parsed = try JSONParser.parse(ours)
        #expect(sorted(parsed), "\(label): members not in UTF-8 order: \(String(decoding: ours, as: UTF8.self))")
    }

    /// Deep equality of two `JSONSerialization` results (numbers by value, whatever their type).
    static func same(_ a: Any, _ b: Any) -> Bool {
        switch (a, b) {
        case (let x as [String: Any], let y as [String: Any]):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? false }
        case (let x as [Any], let y as [Any]):
            return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (let x as String, let y as String): return x == y
        case (is NSNull, is NSNull): return true
        case (let x as NSNumber, let y as NSNumber):
            return x == y || x.doubleValue == y.doubleValue && x.stringValue == y.stringValue
        default: return false
        }
    }

    static func sorted(_ value: JSONValue) -> Bool {
        switch value {
        case .object(let object):
            let names = object.members.map { Array($0.name.utf8) }
            return zip(names, names.dropFirst()).allSatisfy { $0.lexicographicallyPrecedes($1) }
                && object.members.allSatisfy { sorted($0.value) }
        case .array(let elements): return elements.allSatisfy(sorted)
        default: return true
        }
    }
}
