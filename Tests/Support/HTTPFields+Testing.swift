// Small helpers for HTTP requests in tests.

package import Foundation
package import HTTPTypes
package import NIOCore

extension HTTPFields {
    /// `Content-Type: application/json`.
    package static var json: HTTPFields { [.contentType: "application/json"] }
}

extension ByteBuffer {
    /// The buffer's bytes as UTF-8 text.
    package var text: String { String(buffer: self) }
}

extension ByteBuffer {
    /// The buffer's readable bytes as `Data`.
    package var data: Data { Data(self.readableBytesView) }
}
