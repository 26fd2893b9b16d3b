// The body rules of the NHS lab API (nhs §3.5, §3.6).

import ENNHS
import Foundation

/// The body rules of nhs §3.5 and §3.6.
enum NHSLabUpload {
    /// The CTA token (when `withToken`) and the result of a lab's body, or the 422 that names the first problem;
    /// `now` bounds the test's end day.
    static func validate(
        _ body: NHSJSONObject,
        version: NHSUploadVersion,
        withToken: Bool,
        now: Date = Date()
    ) throws(NHSError) -> (CTAToken?, NHSLabResult) {
        var known: Set<String> = ["testEndDate", "testResult"]
        if withToken { known.insert("ctaToken") }
        if version == .v2 { known.insert("testKit") }
        if version == .v1, let unknown = body.unknownNames(beyond: known).first {
            throw .validation("unknown field \(unknown)")
        }
        var token: CTAToken? = nil
        if withToken {
            guard let text = body.string("ctaToken") else { throw .validation("ctaToken is required") }
            guard let cta = CTAToken(text) else { throw .validation("ctaToken is not a valid CTA token") }
            token = cta
        }
        guard let dateText = body.string("testEndDate") else { throw .validation("testEndDate is required") }
        guard let date = NHSTestEndDate(wire: dateText) else {
            throw .validation("testEndDate must be yyyy-MM-ddT00:00:00Z")
        }
        // A test cannot end after today; the next UTC day is allowed for a lab ahead of UTC.
        guard date.day <= NHSTestEndDate(date: now.addingTimeInterval(86_400)).day else {
            throw .validation("testEndDate must not be later than tomorrow (UTC)")
        }
        guard let resultText = body.string("testResult") else { throw .validation("testResult is required") }
        guard let result = NHSTestResult(lab: resultText) else {
            throw .validation("testResult must be POSITIVE, NEGATIVE, VOID or INDETERMINATE")
        }
        var kit = NHSTestKit.labResult
        if version == .v2 {
            guard let kitText = body.string("testKit") else { throw .validation("testKit is required") }
            guard let parsed = NHSTestKit(rawValue: kitText) else {
                throw .validation("testKit must be LAB_RESULT, RAPID_RESULT or RAPID_SELF_REPORTED")
            }
            kit = parsed
        }
        if kit != .labResult && result != .positive {
            throw .validation("\(kit.rawValue) accepts only POSITIVE results")
        }
        return (token, NHSLabResult(testEndDate: date, testResult: result, testKit: kit))
    }
}
