import Foundation
import TestSupport
import Testing

@testable import Media

/// `FileMediaStore`: layout, write-once atomic publication, reads with ranges, delete, concurrency.
struct FileMediaStoreTests {
    static func photo(seed: UInt64 = 1) throws -> ProcessedMedia {
        let upload = try Fixtures.jpeg(Fixtures.busy(width: 200, height: 100, seed: seed), width: 200, height: 100)
        return try MediaProcessor().process(upload)
    }

    func files(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test func putOpenRead() throws {
        let root = MediaFiles.directory() + "/data/media"
        let store = try FileMediaStore(root: root)
        let media = try Self.photo()
        try store.put(media)

        let directory = store.directory(of: media.id)
        #expect(directory == "\(root)/\(media.id.hex.prefix(2))/\(media.id.hex)")
        #expect(files(directory) == ["1080.jpg", "640.jpg", "original.jpg", "square320.jpg"])
        #expect(Set(try store.variants(of: media.id)) == Set(MediaVariant.variants(of: .photo)))

        for variant in media.variants {
            let file = try #require(try store.open(media.id, variant.variant))
            #expect(file.size == variant.bytes.count)
            #expect(file.contentType == "image/jpeg")
            #expect(try file.readAll() == variant.bytes)
            #expect(file.etag == "\"\(media.id.hex)-\(variant.variant.rawValue)\"")
        }
        let file = try #require(try store.open(media.id, .original))
        let bytes = media.variant(.original)!.bytes
        #expect(try file.read(10..<20) == Array(bytes[10..<20]))
        #expect(try file.read((bytes.count - 5)..<(bytes.count + 100)) == Array(bytes.suffix(5)))  // clamped
        #expect(try file.read(bytes.count..<(bytes.count + 1)).isEmpty)

        #expect(try store.open(media.id, .poster) == nil)
        #expect(try store.open(MediaID(contentOf: [1, 2, 3]), .original) == nil)
    }

    @Test func videoOriginalKeepsItsType() throws {
        let upload = try MediaFiles.video(width: 160, height: 120, seconds: 1, container: "mov")
        let media = try MediaProcessor().process(upload)
        let store = try FileMediaStore(root: MediaFiles.directory())
        try store.put(media)
        #expect(files(store.directory(of: media.id)) == ["original.mov", "poster.jpg", "square320.jpg"])
        let original = try #require(try store.open(media.id, .original))
        #expect(original.contentType == "video/quicktime")
        #expect(original.size == media.variant(.original)!.bytes.count)
        #expect(try store.open(media.id, .long1080) == nil)
    }

    /// The same upload twice: the files are kept as they were (same inodes), nothing is left over.
    @Test func writeOnce() throws {
        let store = try FileMediaStore(root: MediaFiles.directory())
        let media = try Self.photo()
        try store.put(media)
        let path = store.directory(of: media.id) + "/original.jpg"
        let inode = try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int
        try store.put(media)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int == inode)
        #expect(!files(store.directory(of: media.id)).contains { $0.hasPrefix(".tmp-") })
    }

    /// A put that died half-way (some variants, a temporary file) is completed by the next put, and the
    /// sweep removes the abandoned temporary file; readers never saw the temporary name.
    @Test func recoversFromAnInterruptedPut() throws {
        let store = try FileMediaStore(root: MediaFiles.directory())
        let media = try Self.photo()
        let directory = store.directory(of: media.id)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(media.variant(.original)!.bytes).write(to: URL(fileURLWithPath: directory + "/original.jpg"))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: directory + "/.tmp-123"))
        #expect(try store.open(media.id, .long1080) == nil)
        try store.put(media)
        #expect(Set(try store.variants(of: media.id)) == Set(MediaVariant.variants(of: .photo)))
        #expect(try store.removeAbandonedTemporaryFiles(olderThanSeconds: 3600) == 0)  // too recent
        #expect(try store.removeAbandonedTemporaryFiles(olderThanSeconds: -10) == 1)
        #expect(files(directory) == ["1080.jpg", "640.jpg", "original.jpg", "square320.jpg"])
    }

    @Test func deleteKeepsOpenReadersWhole() throws {
        let store = try FileMediaStore(root: MediaFiles.directory())
        let media = try Self.photo()
        try store.put(media)
        let open = try #require(try store.open(media.id, .original))
        try store.delete(media.id)
        #expect(try store.open(media.id, .original) == nil)
        #expect(try store.variants(of: media.id).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: store.directory(of: media.id)))
        #expect(try open.readAll() == media.variant(.original)!.bytes)
        try store.delete(media.id)  // again: nothing to do
    }

    @Test func handsOverTheDescriptor() throws {
        let store = try FileMediaStore(root: MediaFiles.directory())
        let media = try Self.photo()
        try store.put(media)
        let file = try #require(try store.open(media.id, .square320))
        let descriptor = file.takeFileDescriptor()
        #expect(descriptor >= 0)
        #expect(file.takeFileDescriptor() == -1)
        #expect(throws: MediaError.self) { try file.readAll() }
        #expect(close(descriptor) == 0)  // still open: ours to close
    }

    /// Several writers (separate store values, as separate processes would have) put the same and
    /// different uploads at once while a reader polls: every variant read is complete, none is torn.
    @Test func concurrentWritersAndReaders() async throws {
        let root = MediaFiles.directory()
        let uploads = try (1...4).map { try Self.photo(seed: UInt64($0)) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<6 {
                group.addTask {
                    let store = try FileMediaStore(root: root)
                    for media in uploads.shuffled() where writer % 2 == 0 || media.id.hex < "8" {
                        try store.put(media)
                    }
                }
            }
            group.addTask {
                let store = try FileMediaStore(root: root)
                for _ in 0..<200 {
                    for media in uploads {
                        for variant in media.variants {
                            if let file = try store.open(media.id, variant.variant) {
                                #expect(try file.readAll() == variant.bytes)
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let store = try FileMediaStore(root: root)
        for media in uploads {
            #expect(Set(try store.variants(of: media.id)) == Set(MediaVariant.variants(of: .photo)))
            #expect(!files(store.directory(of: media.id)).contains { $0.hasPrefix(".tmp-") })
        }
    }

    @Test func ids() {
        let id = MediaID(contentOf: Array("abc".utf8))
        // FIPS 180-2 Appendix B.1 test vector.
        #expect(id.hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(MediaID(id.hex) == id)
        #expect(MediaID("../../etc/passwd") == nil)
        #expect(MediaID(String(id.hex.uppercased())) == nil)
        #expect(MediaID(String(id.hex.dropLast())) == nil)
        #expect(FileMediaStore.defaultRoot(dataDirectory: "./data") == "./data/media")
    }
}
