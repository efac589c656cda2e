extension Array where Element == UInt8 {
    /// `withUnsafeBytes` for a body that throws only ``MediaError`` (the standard one is `rethrows`, which
    /// loses the error type).
    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws(MediaError) -> Result) throws(MediaError) -> Result {
        let outcome: Swift.Result<Result, MediaError> = withUnsafeBytes { buffer in
            do throws(MediaError) {
                return .success(try body(buffer))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }
}
