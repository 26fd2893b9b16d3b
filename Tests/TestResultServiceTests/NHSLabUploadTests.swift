// The body rules of the NHS lab API and token API (nhs §3.5, §3.6), called directly.

import ENCrypto
import ENNHS
import ENServiceKit
import Foundation
import HTTPTypes
import Testing

@testable import TestResultService

@Suite("NHS lab upload validation")
struct NHSLabUploadTests {
    /// A valid V2 body: a lab's `RAPID_RESULT` for token `cc8f0b6z`.
    static func v2Body() -> [String: Any] {
        [
            "ctaToken": "cc8f0b6z",
            "testEndDate": "2020-08-24T00:00:00Z",
            "testResult": "POSITIVE",
            "testKit": "RAPID_RESULT",
        ]
    }

    /// A valid V1 body (no `testKit`).
    static func v1Body() -> [String: Any] {
        ["ctaToken": "cc8f0b6z", "testEndDate": "2020-08-24T00:00:00Z", "testResult": "NEGATIVE"]
    }

    /// The 422 that `fields` is refused with, after checking that it is one.
    static func refusal(
        _ fields: [String: Any],
        version: NHSUploadVersion,
        withToken: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> NHSError? {
        let error = #expect(throws: NHSError.self, sourceLocation: sourceLocation) {
            _ = try NHSLabUpload.validate(NHSJSONObject(fields: fields), version: version, withToken: withToken)
        }
        #expect(error?.status == .unprocessableContent, sourceLocation: sourceLocation)
        #expect(
            error?.message.hasPrefix("validation error: ") == true,
            "\(String(describing: error))",
            sourceLocation: sourceLocation
        )
        return error
    }

    @Test("a test end day after tomorrow (UTC), or an impossible one, is refused; today and tomorrow are taken")
    func testEndDateBounds() throws {
        let now = Date(timeIntervalSince1970: 1_764_763_200)  // 2025-12-03T12:00:00Z
        func body(_ date: String) -> NHSJSONObject {
            NHSJSONObject(fields: ["ctaToken": "cc8f0b6z", "testEndDate": date, "testResult": "NEGATIVE"])
        }
        for date in ["9999-12-31T00:00:00Z", "2025-12-05T00:00:00Z", "2026-01-02T00:00:00Z", "2025-02-30T00:00:00Z"] {
            let error = #expect(throws: NHSError.self, "\(date)") {
                _ = try NHSLabUpload.validate(body(date), version: .v1, withToken: true, now: now)
            }
            #expect(error?.status == .unprocessableContent)
        }
        for date in ["2025-12-03T00:00:00Z", "2025-12-04T00:00:00Z", "2025-11-20T00:00:00Z"] {
            let (_, result) = try NHSLabUpload.validate(body(date), version: .v1, withToken: true, now: now)
            #expect(result.testEndDate.wire == date)
        }
    }

    @Test("a valid V2 upload gives its token and result")
    func validV2() throws {
        let (token, result) = try NHSLabUpload.validate(
            NHSJSONObject(fields: Self.v2Body()),
            version: .v2,
            withToken: true
        )
        #expect(token?.value == "cc8f0b6z")
        #expect(token == CTAToken("cc8f0b6z"))
        let date = try #require(NHSTestEndDate(wire: "2020-08-24T00:00:00Z"))
        #expect(result == NHSLabResult(testEndDate: date, testResult: .positive, testKit: .rapidResult))
    }

    @Test("a valid V1 upload is stored as LAB_RESULT")
    func validV1() throws {
        let (token, result) = try NHSLabUpload.validate(
            NHSJSONObject(fields: Self.v1Body()),
            version: .v1,
            withToken: true
        )
        #expect(token?.value == "cc8f0b6z")
        #expect(result.testKit == .labResult)
        #expect(result.testResult == .negative)
        #expect(result.testEndDate.wire == "2020-08-24T00:00:00Z")
    }

    @Test("V2 takes every kit with a positive result, and LAB_RESULT with any result")
    func kits() throws {
        for kit in NHSTestKit.allCases {
            var body = Self.v2Body()
            body["testKit"] = kit.rawValue
            let (_, result) = try NHSLabUpload.validate(NHSJSONObject(fields: body), version: .v2, withToken: true)
            #expect(result.testKit == kit)
            #expect(result.testResult == .positive)
        }
        for text in ["NEGATIVE", "VOID"] {
            var body = Self.v2Body()
            body["testKit"] = "LAB_RESULT"
            body["testResult"] = text
            let (_, result) = try NHSLabUpload.validate(NHSJSONObject(fields: body), version: .v2, withToken: true)
            #expect(result.testResult.rawValue == text)
        }
    }

    @Test("V2 ignores unknown fields")
    func v2Lenient() throws {
        var body = Self.v2Body()
        body["extra"] = "ignored"
        let (token, _) = try NHSLabUpload.validate(NHSJSONObject(fields: body), version: .v2, withToken: true)
        #expect(token?.value == "cc8f0b6z")
    }

    @Test("V1 is strict: a testKit field, or any other unknown one, is refused")
    func v1Strict() {
        var withKit = Self.v1Body()
        withKit["testKit"] = "LAB_RESULT"
        let error = Self.refusal(withKit, version: .v1)
        #expect(error?.message.contains("testKit") == true)

        var withOther = Self.v1Body()
        withOther["extra"] = 1
        _ = Self.refusal(withOther, version: .v1)
    }

    @Test("a missing, blank or non-string ctaToken, or one that is no CTA token, is refused")
    func badTokens() {
        // `1234abcd` is of the alphabet but fails the Damm check.
        let tokens: [Any] = ["invalid-token", "1234abcd", "CC8F0B6Z", "cc8f0b6", "cc8f0b6zz", "", "  ", 12_345_678]
        for token in tokens {
            for version in [NHSUploadVersion.v1, .v2] {
                var body = version == .v1 ? Self.v1Body() : Self.v2Body()
                body["ctaToken"] = token
                let error = Self.refusal(body, version: version)
                #expect(error?.message.contains("ctaToken") == true, "\(token)")
            }
        }
        var missing = Self.v2Body()
        missing["ctaToken"] = nil
        _ = Self.refusal(missing, version: .v2)
    }

    @Test("a testEndDate with a time of day, a zone offset, no time or an impossible day is refused")
    func badDates() {
        for text in [
            "2020-08-24T01:00:00Z", "2020-08-24T00:00:00+01:00", "2020-08-24", "2020-02-30T00:00:00Z",
            "2020-08-24T00:00:00.000Z",
        ] {
            var body = Self.v2Body()
            body["testEndDate"] = text
            let error = Self.refusal(body, version: .v2)
            #expect(error?.message.contains("testEndDate") == true, "\(text)")
        }
        var missing = Self.v1Body()
        missing["testEndDate"] = nil
        _ = Self.refusal(missing, version: .v1)
    }

    @Test("a testResult outside the lab's four values, lower case included, is refused")
    func badResults() {
        for text in ["positive", "PENDING", "", "Positive"] {
            var body = Self.v2Body()
            body["testResult"] = text
            let error = Self.refusal(body, version: .v2)
            #expect(error?.message.contains("testResult") == true, "\(text)")
        }
    }

    @Test("V2 needs a known testKit")
    func badKits() {
        var missing = Self.v2Body()
        missing["testKit"] = nil
        _ = Self.refusal(missing, version: .v2)
        var unknown = Self.v2Body()
        unknown["testKit"] = "rapid_result"
        _ = Self.refusal(unknown, version: .v2)
    }

    @Test("rapid kits accept only POSITIVE")
    func rapidOnlyPositive() {
        for kit in ["RAPID_RESULT", "RAPID_SELF_REPORTED"] {
            for result in ["NEGATIVE", "VOID", "INDETERMINATE"] {
                var body = Self.v2Body()
                body["testKit"] = kit
                body["testResult"] = result
                let error = Self.refusal(body, version: .v2)
                #expect(error?.message.contains(kit) == true, "\(kit) \(result)")
            }
        }
    }

    @Test("INDETERMINATE is stored as VOID")
    func indeterminate() throws {
        var body = Self.v1Body()
        body["testResult"] = "INDETERMINATE"
        let (_, v1) = try NHSLabUpload.validate(NHSJSONObject(fields: body), version: .v1, withToken: true)
        #expect(v1.testResult == .void)

        var v2Body = Self.v2Body()
        v2Body["testKit"] = "LAB_RESULT"
        v2Body["testResult"] = "INDETERMINATE"
        let (_, v2) = try NHSLabUpload.validate(NHSJSONObject(fields: v2Body), version: .v2, withToken: true)
        #expect(v2.testResult == .void)
        #expect(v2.testKit == .labResult)
    }

    @Test("the token API needs no ctaToken and gives none")
    func tokenGen() throws {
        let v1Fields: [String: Any] = ["testEndDate": "2020-08-24T00:00:00Z", "testResult": "POSITIVE"]
        let (v1Token, v1) = try NHSLabUpload.validate(NHSJSONObject(fields: v1Fields), version: .v1, withToken: false)
        #expect(v1Token == nil)
        #expect(v1.testKit == .labResult)
        #expect(v1.testResult == .positive)

        var v2Fields = Self.v2Body()
        v2Fields["ctaToken"] = nil
        let (v2Token, v2) = try NHSLabUpload.validate(NHSJSONObject(fields: v2Fields), version: .v2, withToken: false)
        #expect(v2Token == nil)
        #expect(v2.testKit == .rapidResult)
    }

    @Test("the token API's V2 ignores a ctaToken; its strict V1 refuses one")
    func tokenGenWithToken() throws {
        var v2Fields = Self.v2Body()
        v2Fields["ctaToken"] = "invalid-token"
        let (token, _) = try NHSLabUpload.validate(NHSJSONObject(fields: v2Fields), version: .v2, withToken: false)
        #expect(token == nil)

        let error = Self.refusal(Self.v1Body(), version: .v1, withToken: false)
        #expect(error?.message.contains("ctaToken") == true)
    }

    @Test("the token API applies the same rules to date, result and kit")
    func tokenGenRules() {
        var date = Self.v2Body()
        date["testEndDate"] = "2020-08-24T12:00:00Z"
        _ = Self.refusal(date, version: .v2, withToken: false)
        var rapid = Self.v2Body()
        rapid["testResult"] = "NEGATIVE"
        _ = Self.refusal(rapid, version: .v2, withToken: false)
    }
}
