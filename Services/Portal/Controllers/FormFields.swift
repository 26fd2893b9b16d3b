// application/x-www-form-urlencoded bodies, as the portal's forms send them.

import Foundation
import Hummingbird

/// The fields of a form body (at most 16 KiB; later duplicates are ignored).
struct FormFields: Sendable {
    private var values: [String: String] = [:]

    subscript(_ name: String) -> String? { self.values[name] }

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

    static func read(_ request: Request, context: some RequestContext) async throws -> FormFields {
        let buffer = try await request.body.collect(upTo: 16 * 1024)
        return FormFields(String(buffer: buffer))
    }
}
