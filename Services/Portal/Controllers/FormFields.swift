// The bodies of the portal's forms: application/x-www-form-urlencoded, and multipart/form-data for a file upload.

import Foundation
import Hummingbird
import NIOCore

/// The fields of a form body (later duplicates are ignored). A multipart body's parts are kept as bytes too (a file).
struct FormFields: Sendable {
    private var values: [String: String] = [:]
    private var parts: [String: [UInt8]] = [:]

    subscript(_ name: String) -> String? { self.values[name] }

    /// The bytes of a multipart part (an uploaded file), exactly as sent.
    func bytes(_ name: String) -> [UInt8]? { self.parts[name] }

    init(_ body: String) {
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let rawName = parts.first else { continue }
            let decode = { (text: Substring) -> String in
                String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            let name = decode(rawName)
            if self.values[name] == nil { self.values[name] = parts.count > 1 ? decode(parts[1]) : "" }
        }
    }

    /// A multipart/form-data body (RFC 7578): parts between `--boundary` lines, each with a `Content-Disposition:
    /// form-data; name="…"` header; a body that is not one yields no fields.
    init(multipart body: [UInt8], boundary: String) {
        let delimiter = Array("--\(boundary)".utf8)
        let separator = Array("\r\n".utf8) + delimiter
        guard body.starts(with: delimiter) else { return }
        var rest = body[delimiter.count...]
        while rest.starts(with: Array("\r\n".utf8)) {
            rest = rest.dropFirst(2)
            guard let headerEnd = rest.firstRange(of: Array("\r\n\r\n".utf8)),
                let end = rest[headerEnd.upperBound...].firstRange(of: separator)
            else { return }
            let headers = String(decoding: rest[..<headerEnd.lowerBound], as: UTF8.self)
            let content = Array(rest[headerEnd.upperBound..<end.lowerBound])
            if let name = Self.partName(headers), self.parts[name] == nil {
                self.parts[name] = content
                self.values[name] = String(decoding: content, as: UTF8.self)
            }
            rest = rest[end.upperBound...]
        }
    }

    /// The `name` parameter of a part's `Content-Disposition: form-data` header.
    private static func partName(_ headers: String) -> String? {
        for line in headers.split(separator: "\r\n") {
            let header = line.split(separator: ":", maxSplits: 1)
            guard header.count == 2, header[0].lowercased() == "content-disposition" else { continue }
            for parameter in header[1].split(separator: ";").dropFirst() {
                let pair = parameter.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0] == "name" else { continue }
                return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return nil
    }

    /// The largest form body of most pages.
    static let maxBytes = 16 * 1024
    /// The largest form body of the local-risk pages (a list of up to 1 MB; base64url on the way back, which a form
    /// sends as it is, under 1.4 MB).
    static let maxUploadBytes = 3 * 1_048_576

    /// The form of a POST; up to `maxUploadBytes` on the local-risk pages when `large` (a venue officer's session),
    /// `maxBytes` everywhere else.
    static func read(_ request: Request, large: Bool) async throws -> FormFields {
        let limit = large && request.uri.path.hasPrefix("/local-risk/") ? Self.maxUploadBytes : Self.maxBytes
        let buffer = try await request.body.collect(upTo: limit)
        let contentType = request.headers[.contentType] ?? ""
        if contentType.lowercased().hasPrefix("multipart/form-data"),
            let boundary = contentType.split(separator: ";").dropFirst()
                .map({ $0.trimmingCharacters(in: .whitespaces) })
                .first(where: { $0.lowercased().hasPrefix("boundary=") })?.dropFirst("boundary=".count)
        {
            return FormFields(
                multipart: Array(buffer.readableBytesView),
                boundary: String(boundary).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            )
        }
        return FormFields(String(buffer: buffer))
    }
}
