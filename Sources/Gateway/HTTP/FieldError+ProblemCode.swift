import Wire

extension FieldError {
    /// A field error with one of the gateway's codes (`required`, `unknown_field`, ...).
    init(field: String, code: ProblemCode, message: String) {
        self.init(field: field, code: code.wire, message: message)
    }
}
