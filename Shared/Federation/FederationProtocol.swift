// The wire vocabulary of the EU federation gateway (cwa-server §5.1, cwa-satellites §5.2): media types, headers,
// batch tags and the multi-status body of an upload.

import ENModels
package import Foundation

/// Media types and header names of the gateway API.
package enum FederationProtocol {
    /// The protobuf media type of upload bodies and download answers; the version must match exactly.
    package static let protobufMediaType = "application/protobuf; version=1.0"
    /// The JSON media type the gateway also speaks, and its answers to uploads.
    package static let jsonMediaType = "application/json; version=1.0"
    package static let batchTagHeader = "batchTag"
    package static let nextBatchTagHeader = "nextBatchTag"
    package static let batchSignatureHeader = "batchSignature"
    /// The client certificate's SHA-256, as the gateway's TLS front forwards it (and national clients send it).
    package static let clientThumbprintHeader = "X-SSL-Client-SHA256"
    /// The client certificate's subject DN, likewise.
    package static let clientDNHeader = "X-SSL-Client-DN"
    /// A `nextBatchTag` of this literal text means "no further batch".
    package static let noBatchTag = "null"
    /// At most this many keys in one upload (413 beyond).
    package static let maximumUploadKeys = 5000

    /// `yyyy-MM-dd` of a UTC day.
    package static func dayString(_ date: Date) -> String {
        let parts = Calendar.utc.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
    }

    /// The UTC midnight of a `yyyy-MM-dd` day; `nil` for anything else (a real calendar date is required).
    package static func day(parsing text: some StringProtocol) -> Date? {
        WireTime.day(text)
    }

    /// A header value that counts as present: not empty and not the literal `null`.
    package static func batchTag(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value != self.noBatchTag else { return nil }
        return value
    }
}

/// Tags of a national backend's uploads: `{year}-{month}-{day}-{Base64 of 4 random bytes}-{counter}`, the date in UTC
/// without zero padding (cwa-server §5.2), so two runs of one day never collide and a tag names its day.
package struct UploadBatchTags: Sendable {
    private let prefix: String

    /// The tags of one upload run at `time`.
    package init(time: Date, random generator: inout some RandomNumberGenerator) {
        let parts = Calendar.utc.dateComponents([.year, .month, .day], from: time)
        let nonce = (0..<4).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        self.prefix = "\(parts.year!)-\(parts.month!)-\(parts.day!)-\(Data(nonce).base64EncodedString())"
    }

    /// The tag of the run's batch number `counter` (from 1).
    package func tag(_ counter: Int) -> String {
        "\(self.prefix)-\(counter)"
    }
}

/// The body of a 207 answer to an upload: indices into the uploaded key list by outcome
/// (`{"201": […], "409": […], "500": […]}`).
package struct BatchUploadResponse: Codable, Sendable, Equatable {
    package var created: [Int]
    package var conflict: [Int]
    package var failed: [Int]

    package init(created: [Int] = [], conflict: [Int] = [], failed: [Int] = []) {
        self.created = created
        self.conflict = conflict
        self.failed = failed
    }

    enum CodingKeys: String, CodingKey {
        case created = "201"
        case conflict = "409"
        case failed = "500"
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.created = try container.decodeIfPresent([Int].self, forKey: .created) ?? []
        self.conflict = try container.decodeIfPresent([Int].self, forKey: .conflict) ?? []
        self.failed = try container.decodeIfPresent([Int].self, forKey: .failed) ?? []
    }
}

/// A callback subscription of a country at the gateway.
package struct CallbackRegistration: Sendable, Codable, Equatable {
    package var callbackId: String
    package var url: String

    package init(callbackId: String, url: String) {
        self.callbackId = callbackId
        self.url = url
    }
}
