import CVips

/// libvips, set up once per process (`VIPS_INIT`) the first time any media code needs it.
///
/// libvips is thread-safe once initialised. Settings chosen here, for a server that sees every upload
/// once:
/// - the operation cache is off (0 operations, 0 bytes, 0 files). libvips caches recent operations
///   keyed by their arguments so that re-running one is free; no upload is ever processed twice, so it
///   would never hit, and each cached entry keeps its input and output images (and so the upload's
///   buffer and decoded pixels) alive after the request ends;
/// - "untrusted" loaders are blocked (`vips_block_untrusted_set`: ImageMagick, PDF, SVG, FITS, …), so
///   even a bug in our sniffing cannot route an upload into them. Only the four loaders named by the
///   sniffed type are ever called;
/// - libvips warnings (the `VIPS` GLib log domain, e.g. "premature end of JPEG file") are discarded
///   instead of written to standard error, which is the services' structured log. A warning that
///   matters becomes an error, and errors are returned, never logged;
/// - worker threads per pipeline: libvips's default (`VIPS_CONCURRENCY` or the number of CPUs).
enum Vips {
    /// Operations kept by libvips's operation cache (0: off); see the type's documentation.
    static let cacheMaxOperations: Int32 = 0
    /// Bytes of images kept by the operation cache (0: off).
    static let cacheMaxBytes = 0
    /// Open files kept by the operation cache (0: off).
    static let cacheMaxFiles: Int32 = 0

    private static let setUp: Result<Void, MediaError> = {
        guard shim_vips_init("InstaBackend") == 0 else {
            return .failure(.processingFailed(operation: "vips_init", message: takeError()))
        }
        vips_cache_set_max(cacheMaxOperations)
        vips_cache_set_max_mem(cacheMaxBytes)
        vips_cache_set_max_files(cacheMaxFiles)
        vips_block_untrusted_set(1)
        let levels = GLogLevelFlags(rawValue: G_LOG_LEVEL_WARNING.rawValue | G_LOG_LEVEL_MESSAGE.rawValue)
        g_log_set_handler("VIPS", levels, { _, _, _, _ in }, nil)
        return .success(())
    }()

    /// Initialises libvips if this is the first call in the process; later calls return at once.
    /// - Throws: ``MediaError/processingFailed(operation:message:)`` if libvips cannot start (ABI mismatch).
    static func start() throws(MediaError) {
        try setUp.get()
    }

    /// libvips's error text since the last call, cleared. libvips keeps one buffer per process, so when
    /// several threads fail at once their messages can mix; they are for diagnostics only.
    static func takeError() -> String {
        guard let text = vips_error_buffer_copy() else { return "" }
        defer { g_free(text) }
        var message = String(cString: text)
        while message.last == "\n" { message.removeLast() }
        return message
    }
}
