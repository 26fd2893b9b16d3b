// What may be logged about an error that ends a service or a request.

package import ENPersistence
package import Logging

extension ErrorMetadata {
    /// `of(error)` plus `error.description`: our own error types describe themselves without secrets; others are
    /// named by type only.
    package static func described(_ error: any Error) -> Logger.Metadata {
        let description =
            switch error {
            case let error as MigrationError: error.description
            case let error as DocumentError: error.description
            default: String(reflecting: type(of: error))
            }
        return self.of(error).merging(["error.description": "\(description)"]) { first, _ in first }
    }
}
