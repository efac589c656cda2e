import Media
import ServiceKit
import Support
import Wire

/// Removes media nothing uses any more (docs/media.md "Collection"): every `intervalMs`, and
/// `delayMs` after each release, it asks the store for the due ids nothing references and
/// deletes their files inside the transaction that deletes their rows.
struct MediaCollector: Service {
    let records: any MediaRecordStore
    let files: any MediaStore
    let graceMs: Int64
    let delayMs: Int64
    let intervalMs: Int
    let logger: Logger

    func run() async {
        while !Task.isCancelled {
            await collect()
            try? await Task.sleep(for: .milliseconds(intervalMs))
        }
    }

    /// Looks at the media due now (in batches of 100 until none is left).
    func collect() async {
        let files = self.files
        do {
            while true {
                let removed = try await records.collect(nowMs: Timestamp.nowMs(), graceMs: graceMs, limit: 100) { hex in
                    guard let id = MediaID(hex) else { return }
                    do throws(MediaError) { try files.delete(id) } catch {
                        logger.warning("media.remove_failed", metadata: ["media.id": hex, "error": error.detail])
                        throw ServiceError(error)
                    }
                }
                if !removed.isEmpty { logger.info("media.collected", metadata: ["count": "\(removed.count)"]) }
                if removed.count < 100 { return }
            }
        } catch {
            logger.warning("media.collect_failed", metadata: ["error": "\(error)"])
        }
    }

    /// Something was released: collect once its delay is over, in the background. Without a
    /// delay (`PROFILE_MEDIA_GC_DELAY_MS=0`, as the tests run) it collects before returning, so
    /// the reply to the request that released it comes after the files are gone.
    func released() async {
        guard delayMs > 0 else { return await collect() }
        let collector = self
        Task {
            try? await Task.sleep(for: .milliseconds(collector.delayMs))
            await collector.collect()
        }
    }
}
