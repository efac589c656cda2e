#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A ``MediaStore`` in a directory tree: `<root>/<first two hex digits of the id>/<id>/<variant>.<ext>`,
/// e.g. `media/3f/3f9a…c1/1080.jpg`, `media/3f/3f9a…c1/original.mov`.
///
/// Content-addressed (the directory is the upload's SHA-256), so a repeated upload maps onto the files
/// already there. Each variant is written to a temporary file in its final directory (`.tmp-…`, created
/// with `O_EXCL`, so concurrent writers never share one), flushed with `fsync`, then published with
/// `link(2)` — atomic, and failing with `EEXIST` instead of replacing, which makes the first complete
/// writer win for good — and the directory is flushed too. A reader therefore sees a variant either
/// complete or not at all, in this process or any other on the same file system (local disks and NFS;
/// on a file system without hard links it falls back to `rename(2)`, still atomic, the last writer
/// winning with identical bytes). A crash can leave `.tmp-` files behind, never a partial variant;
/// ``removeAbandonedTemporaryFiles(olderThanSeconds:)`` sweeps them.
///
/// Deleting removes the files; a reader that already opened one keeps reading it to the end (POSIX
/// keeps an open file's data until it is closed).
public struct FileMediaStore: MediaStore {
    /// The directory holding everything, e.g. `DATA_DIR/media`.
    public let root: String

    /// Uses `root`, creating it (and missing parents, mode 0755) if needed.
    /// - Throws: ``MediaError/storage(operation:path:errno:)`` if it cannot be created.
    public init(root: String) throws(MediaError) {
        self.root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
        try Self.makeDirectories(self.root)
    }

    /// The default root under a service's data directory: `<dataDirectory>/media` (API.md: "files under
    /// `DATA_DIR/media` by default").
    public static func defaultRoot(dataDirectory: String) -> String {
        dataDirectory.hasSuffix("/") ? "\(dataDirectory)media" : "\(dataDirectory)/media"
    }

    /// The directory of one media: `<root>/<2 hex digits>/<id>`.
    public func directory(of id: MediaID) -> String {
        "\(root)/\(id.hex.prefix(2))/\(id.hex)"
    }

    // MARK: MediaStore

    /// Writes each variant once (temporary file, fsync, link), then flushes the directory; see ``MediaStore/put(_:)``.
    public func put(_ media: ProcessedMedia) throws(MediaError) {
        let directory = directory(of: media.id)
        try Self.makeDirectories(directory)
        var published = false
        for variant in media.variants {
            let path = "\(directory)/\(Self.fileName(variant.variant, variant.type))"
            var attempt = 0
            while true {
                attempt += 1
                if Self.fileExists(path) { break }
                do throws(MediaError) {
                    try Self.writeOnce(variant.bytes, to: path, in: directory)
                    published = true
                    break
                } catch {
                    // A concurrent delete removed the directory (or our temporary file) meanwhile: redo.
                    guard case .storage(_, _, ENOENT) = error, attempt < 3 else { throw error }
                    try Self.makeDirectories(directory)
                }
            }
        }
        if published { try Self.syncDirectory(directory) }
    }

    /// Opens `<variant>.<ext>` read-only; see ``MediaStore/open(_:_:)``.
    public func open(_ id: MediaID, _ variant: MediaVariant) throws(MediaError) -> MediaFile? {
        let directory = directory(of: id)
        for type in Self.candidateTypes(for: variant) {
            let path = "\(directory)/\(Self.fileName(variant, type))"
            let descriptor = openFile(path, O_RDONLY | O_CLOEXEC)
            if descriptor < 0 {
                let error = errno
                if error == ENOENT || error == ENOTDIR { continue }
                throw .storage(operation: "open", path: path, errno: error)
            }
            var status = stat()
            guard fstat(descriptor, &status) == 0 else {
                let error = errno
                close(descriptor)
                throw .storage(operation: "fstat", path: path, errno: error)
            }
            return MediaFile(id: id, variant: variant, type: type, size: Int(status.st_size), descriptor: descriptor)
        }
        return nil
    }

    /// The published variant files in the media's directory; see ``MediaStore/variants(of:)``.
    public func variants(of id: MediaID) throws(MediaError) -> [MediaVariant] {
        try Self.entries(of: directory(of: id)).compactMap { name in
            guard !name.hasPrefix("."), let dot = name.lastIndex(of: ".") else { return nil }
            return MediaVariant(rawValue: String(name[..<dot]))
        }
    }

    /// Unlinks every file in the media's directory, then the directory; see ``MediaStore/delete(_:)``.
    public func delete(_ id: MediaID) throws(MediaError) {
        let directory = directory(of: id)
        for name in try Self.entries(of: directory) where unlink("\(directory)/\(name)") != 0 && errno != ENOENT {
            throw .storage(operation: "unlink", path: "\(directory)/\(name)", errno: errno)
        }
        // ENOTEMPTY/EEXIST: a concurrent put is adding files again; they stay (the caller's references decide).
        if rmdir(directory) != 0, ![ENOENT, ENOTEMPTY, EEXIST].contains(errno) {
            throw .storage(operation: "rmdir", path: directory, errno: errno)
        }
    }

    /// Removes `.tmp-` files older than `olderThanSeconds` (left by a writer that crashed between creating
    /// and publishing a variant). Walks the whole tree: run it rarely, e.g. at start-up.
    /// - Returns: how many files were removed.
    /// - Throws: ``MediaError/storage(operation:path:errno:)``.
    @discardableResult
    public func removeAbandonedTemporaryFiles(olderThanSeconds: Int) throws(MediaError) -> Int {
        let cutoff = time(nil) - time_t(olderThanSeconds)
        var removed = 0
        for shard in try Self.entries(of: root) where shard.utf8.count == 2 {
            for media in try Self.entries(of: "\(root)/\(shard)") {
                let directory = "\(root)/\(shard)/\(media)"
                for name in try Self.entries(of: directory) where name.hasPrefix(".tmp-") {
                    var status = stat()
                    let path = "\(directory)/\(name)"
                    if stat(path, &status) == 0, status.st_mtim.tv_sec < cutoff, unlink(path) == 0 { removed += 1 }
                }
            }
        }
        return removed
    }

    // MARK: Files

    /// `<variant>.<ext>`: `original.jpg`, `original.mp4`, `original.mov`, `poster.jpg`, `1080.jpg`, …
    static func fileName(_ variant: MediaVariant, _ type: MediaType) -> String {
        let ext =
            switch type {
            case .jpeg: "jpg"
            case .png: "png"
            case .webp: "webp"
            case .heic: "heic"
            case .mp4: "mp4"
            case .quicktime: "mov"
            }
        return "\(variant.rawValue).\(ext)"
    }

    /// The types a stored variant can have, most likely first (only a video's `original` is not JPEG).
    private static func candidateTypes(for variant: MediaVariant) -> [MediaType] {
        variant == .original ? [.jpeg, .mp4, .quicktime] : [.jpeg]
    }

    private static func fileExists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// Writes `bytes` to a fresh temporary file in `directory`, flushes it, and links it in as `path`
    /// unless `path` already exists; the temporary name is removed on every path.
    private static func writeOnce(_ bytes: [UInt8], to path: String, in directory: String) throws(MediaError) {
        let temporary = "\(directory)/.tmp-\(UInt64.random(in: .min ... .max))"
        let descriptor = openFile(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .storage(operation: "open", path: temporary, errno: errno) }
        var linked = false
        defer { if !linked { unlink(temporary) } }
        let written: Int32? = bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let n = write(descriptor, buffer.baseAddress! + done, buffer.count - done)
                if n >= 0 {
                    done += n
                } else if errno != EINTR {
                    return errno
                }
            }
            return nil
        }
        if let written {
            close(descriptor)
            throw .storage(operation: "write", path: temporary, errno: written)
        }
        guard fsync(descriptor) == 0 else {
            let error = errno
            close(descriptor)
            throw .storage(operation: "fsync", path: temporary, errno: error)
        }
        guard close(descriptor) == 0 else { throw .storage(operation: "close", path: temporary, errno: errno) }
        if link(temporary, path) == 0 || errno == EEXIST {
            return  // published, or another writer's complete copy is there already; `defer` unlinks ours
        }
        let error = errno
        guard [EPERM, ENOTSUP, EOPNOTSUPP, EMLINK, EXDEV].contains(error) else {
            throw .storage(operation: "link", path: path, errno: error)
        }
        // No hard links on this file system: rename, which is atomic too but replaces.
        guard rename(temporary, path) == 0 else { throw .storage(operation: "rename", path: path, errno: errno) }
        linked = true
    }

    /// `mkdir -p` with mode 0755; a directory made here is flushed into its parent.
    private static func makeDirectories(_ path: String) throws(MediaError) {
        if fileExists(path) { return }
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            let parent = prefix.isEmpty ? "/" : prefix
            prefix += "/\(component)"
            if mkdir(prefix, 0o755) == 0 {
                try syncDirectory(parent)
            } else if errno != EEXIST {
                throw .storage(operation: "mkdir", path: prefix, errno: errno)
            }
        }
    }

    /// `fsync` of a directory, so the names created in it survive a crash.
    private static func syncDirectory(_ path: String) throws(MediaError) {
        let descriptor = openFile(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .storage(operation: "open", path: path, errno: errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw .storage(operation: "fsync", path: path, errno: errno) }
    }

    /// The names in a directory, without `.` and `..`; empty if it does not exist.
    private static func entries(of path: String) throws(MediaError) -> [String] {
        guard let stream = opendir(path) else {
            if errno == ENOENT || errno == ENOTDIR { return [] }
            throw .storage(operation: "opendir", path: path, errno: errno)
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

/// open(2), named apart from ``FileMediaStore/open(_:_:)``.
private func openFile(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    open(path, flags, mode)
}
