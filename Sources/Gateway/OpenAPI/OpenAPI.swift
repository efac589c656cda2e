/// The API's OpenAPI 3.1 document, served at `/openapi.json`.
enum OpenAPI {
    /// The document's JSON text (`openAPIDocumentJSON`, kept in step with `Gateway.routeTable`).
    static func document() -> String { openAPIDocumentJSON }
}
