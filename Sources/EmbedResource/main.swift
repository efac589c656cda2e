import Foundation

// Build tool: `EmbedResource <input> <output.swift> <TypeName>` writes a Swift file declaring
// `enum <TypeName> { static let text: String; static let bytes: [UInt8] }` with the input's
// contents (UTF-8), as a raw string literal whose delimiter the contents cannot close.
let arguments = CommandLine.arguments
guard arguments.count == 4 else {
    FileHandle.standardError.write(Data("usage: EmbedResource <input> <output.swift> <TypeName>\n".utf8))
    exit(2)
}
guard let data = FileManager.default.contents(atPath: arguments[1]), let text = String(data: data, encoding: .utf8) else {
    FileHandle.standardError.write(Data("EmbedResource: cannot read \(arguments[1]) as UTF-8\n".utf8))
    exit(1)
}
var hashes = "#"
while text.contains("\"" + hashes) || text.contains("\\" + hashes) { hashes += "#" }
let source = """
    // Generated at build time by EmbedResource from \(URL(fileURLWithPath: arguments[1]).lastPathComponent); not checked in.

    /// The contents of \(URL(fileURLWithPath: arguments[1]).lastPathComponent), embedded at build time.
    enum \(arguments[3]) {
        /// The file's text.
        static let text: String = \(hashes)\"\"\"
    \(text)
    \"\"\"\(hashes)
        /// The file's UTF-8 bytes.
        static let bytes: [UInt8] = Array(text.utf8)
    }

    """
do {
    try source.write(toFile: arguments[2], atomically: true, encoding: .utf8)
} catch {
    FileHandle.standardError.write(Data("EmbedResource: cannot write \(arguments[2]): \(error)\n".utf8))
    exit(1)
}
