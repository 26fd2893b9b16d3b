// Which results an app is shown and what it may do with them (nhs §3.4).

import ENNHS
import ENServiceKit

/// The flags of a V2 answer and whether a result is hidden from the asking app.
struct NHSVirologyPolicy: Sendable, Equatable {
    var diagnosisKeySubmissionSupported: Bool
    var requiresConfirmatoryTest: Bool

    /// The countries whose policy the reference knows; for any other the flags are false.
    static let countries: Set<String> = ["England", "Wales"]

    init(country: String?, result: NHSTestResult, kit: NHSTestKit) {
        guard let country, Self.countries.contains(country), result == .positive else {
            self.init(diagnosisKeySubmissionSupported: false, requiresConfirmatoryTest: false)
            return
        }
        let selfReported = kit == .rapidSelfReported
        self.init(diagnosisKeySubmissionSupported: !selfReported, requiresConfirmatoryTest: selfReported)
    }

    init(diagnosisKeySubmissionSupported: Bool, requiresConfirmatoryTest: Bool) {
        self.diagnosisKeySubmissionSupported = diagnosisKeySubmissionSupported
        self.requiresConfirmatoryTest = requiresConfirmatoryTest
    }

    /// Whether a V2 app must not see the result: apps up to 4.3 cannot handle a confirmatory test (a version they do
    /// not send is never blocked).
    func hidesV2(from agent: NHSUserAgent) -> Bool {
        self.requiresConfirmatoryTest && agent.isAtMost(major: 4, minor: 3)
    }

    /// Whether a V1 app must not see a result of `kit`: V1 knows no self-reported rapid tests.
    static func hidesV1(_ kit: NHSTestKit) -> Bool {
        kit == .rapidSelfReported
    }
}
