/// Where processed media lives: variants written once under their upload's ``MediaID``, read back by id
/// and variant, deleted as a whole.
///
/// Implementations must be safe to share between threads and between processes using the same storage
/// (several ProfileService replicas, a gateway reading while a service writes), and must never expose a
/// partly written variant. ``FileMediaStore`` keeps files in a directory; the shape leaves room for
/// another engine (an object store) behind the same calls.
public protocol MediaStore: Sendable {
    /// Stores every variant of `media` under `media.id`, each atomically, and returns when all are durable.
    ///
    /// Write-once: a variant already stored under that id is kept as it is (the same upload gives the same
    /// variants), so storing the same upload twice, or from two processes at once, is harmless, and a
    /// reader never sees a file change under it.
    /// - Throws: ``MediaError/storage(operation:path:errno:)``.
    func put(_ media: ProcessedMedia) throws(MediaError)

    /// Opens one stored variant for reading, or returns nil if there is no such id or variant.
    /// - Throws: ``MediaError/storage(operation:path:errno:)`` for failures other than "not there".
    func open(_ id: MediaID, _ variant: MediaVariant) throws(MediaError) -> MediaFile?

    /// The variants stored under `id` (empty if none).
    /// - Throws: ``MediaError/storage(operation:path:errno:)``.
    func variants(of id: MediaID) throws(MediaError) -> [MediaVariant]

    /// Deletes every variant stored under `id`; nothing happens if there is none. Readers that already
    /// opened a variant can finish reading it.
    /// - Throws: ``MediaError/storage(operation:path:errno:)``.
    func delete(_ id: MediaID) throws(MediaError)
}
