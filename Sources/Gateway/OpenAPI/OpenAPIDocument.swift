/// Placeholder: the lead replaces this file with the full OpenAPI 3.1 document.
let openAPIDocumentJSON = "{}"
