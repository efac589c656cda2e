import Harness
import Support
import Testing
import Wire

/// Runs `body`, expecting a `ServiceError` with `code` and `status`; returns it for more checks.
@discardableResult
func expectError(
    _ code: String, status: Int, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> ServiceError? {
    do {
        try await body()
        Issue.record("expected \(status) \(code), got success", sourceLocation: sourceLocation)
        return nil
    } catch let error as ServiceError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        #expect(error.status == status, "\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected ServiceError \(code), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
