// The value sets of the NHS test path (nhs §3.3, §3.5), shared by test-result-service, verification-service and
// the `cwa` client.

import ENCrypto
import ENModels
import ENServiceKit
package import Foundation
import HTTPTypes
package import Hummingbird
import NIOCore

/// `testResult` of the NHS family.
package enum NHSTestResult: String, Sendable, Codable, CaseIterable {
    case positive = "POSITIVE"
    case negative = "NEGATIVE"
    case void = "VOID"

    /// A lab's value: the three above, and `INDETERMINATE`, which is stored as `VOID` (§3.5).
    package init?(lab text: String) {
        if text == "INDETERMINATE" {
            self = .void
        } else if let value = NHSTestResult(rawValue: text) {
            self = value
        } else {
            return nil
        }
    }
}

/// `testKit` of the NHS family.
package enum NHSTestKit: String, Sendable, Codable, CaseIterable {
    case labResult = "LAB_RESULT"
    case rapidResult = "RAPID_RESULT"
    case rapidSelfReported = "RAPID_SELF_REPORTED"
}

/// `testEndDate`: a day, written `yyyy-MM-ddT00:00:00Z` on the wire (§3.5: any other time of day is refused).
package struct NHSTestEndDate: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `yyyy-MM-dd`.
    package let day: String

    /// Parses the wire form, exactly; `nil` for anything else (another time, a zone offset, an impossible day).
    package init?(wire text: String) {
        guard text.utf8.count == 20, text.hasSuffix("T00:00:00Z") else { return nil }
        self.init(day: String(text.prefix(10)))
    }

    /// A `yyyy-MM-dd` day as stored; `nil` when it is no real day.
    package init?(day: String) {
        guard let date = WireTime.day(day), Calendar.utc.component(.year, from: date) >= 2000 else { return nil }
        self.day = day
    }

    /// The day starting at `date` (UTC).
    package init(date: Date) {
        self.day = String(date.formatted(.iso8601.year().month().day()).prefix(10))
    }

    /// `yyyy-MM-ddT00:00:00Z`.
    package var wire: String { self.day + "T00:00:00Z" }

    package var description: String { self.wire }

    package init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = NHSTestEndDate(wire: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "testEndDate"))
        }
        self = value
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.wire)
    }
}

/// What test-result-service reports about a CTA token's result to verification-service (`POST /api/v1/nhs/result`).
package struct NHSResultReport: Codable, Equatable, Sendable {
    /// The stored hash of the token.
    package var ctaHash: String
    /// `pending` or `available`.
    package var status: String
    package var testEndDate: NHSTestEndDate?
    package var testResult: NHSTestResult?
    package var testKit: NHSTestKit?

    package init(
        ctaHash: String,
        status: String,
        testEndDate: NHSTestEndDate? = nil,
        testResult: NHSTestResult? = nil,
        testKit: NHSTestKit? = nil
    ) {
        self.ctaHash = ctaHash
        self.status = status
        self.testEndDate = testEndDate
        self.testResult = testResult
        self.testKit = testKit
    }

    /// The result when it is available.
    package var available: (date: NHSTestEndDate, result: NHSTestResult, kit: NHSTestKit)? {
        guard self.status == "available", let date = self.testEndDate, let result = self.testResult,
            let kit = self.testKit
        else { return nil }
        return (date, result, kit)
    }
}

/// Reading the JSON bodies of the NHS family: objects of named values, checked field by field so each answer can name
/// what was wrong (the reference's 422 `validation error: …`).
package struct NHSJSONObject: @unchecked Sendable {
    /// The parsed object (JSON types only: `String`, `NSNumber`, `NSNull`, arrays, dictionaries).
    package let fields: [String: Any]

    package init(fields: [String: Any]) {
        self.fields = fields
    }

    /// The body of `request` as a JSON object, whatever its content type (the reference checks none); a body that is
    /// not one is `error`.
    package static func read(
        _ request: Request,
        context: some RequestContext,
        error: NHSError
    ) async throws -> NHSJSONObject {
        let buffer = try await request.body.collect(upTo: context.maxUploadSize)
        guard let object = try? JSONSerialization.jsonObject(with: Data(buffer.readableBytesView)),
            let fields = object as? [String: Any]
        else { throw error }
        return NHSJSONObject(fields: fields)
    }

    /// The string `name`, or `nil` when it is missing, `null`, not a string or blank.
    package func string(_ name: String) -> String? {
        guard let value = self.fields[name] as? String, !value.trimmingCharacters(in: .whitespaces).isEmpty else {
            return nil
        }
        return value
    }

    /// Names present beyond `known` (the strict V1 bodies refuse them).
    package func unknownNames(beyond known: Set<String>) -> [String] {
        self.fields.keys.filter { !known.contains($0) }.sorted()
    }
}

/// Instants of the NHS family's JSON (`2020-08-24T21:59:00Z`).
package enum NHSInstant {
    /// An ISO-8601 instant, with or without fractional seconds (Android's `Instant.toString()` adds them when they are
    /// not zero); `nil` for anything else, an impossible day or time too.
    package static func parse(_ text: String) -> Date? {
        WireTime.instant(text, fractionalSeconds: true)
    }

    /// `2020-08-24T21:59:00Z`.
    package static func text(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}

extension NHSJSONObject {
    /// Whether a parsed JSON value is `true` or `false`: Foundation gives both as numbers of type `c` (numbers are `i`,
    /// `q` or `d`), so `1` is never taken for `true` nor `true` for `1`.
    package static func isBoolean(_ value: Any?) -> Bool {
        guard let number = value as? NSNumber else { return false }
        let type = String(cString: number.objCType)
        return type == "c" || type == "B"
    }
}
