// The test result codes shared by labs, test-result-service, verification-service and the app (cwa-satellites §1.7).

/// The kind of test a result belongs to. Each kind owns a block of five codes.
package enum TestKind: Int, CaseIterable, Sendable {
    /// PCR test from a connected lab: codes 0–4.
    case pcr = 0
    /// Rapid antigen test ("quick test"): codes 5–9.
    case rapidAntigen = 5
    /// Point-of-care nucleic acid test: codes 10–14.
    case pointOfCareNAT = 10
}

/// What a test said, independent of its kind; the raw value is the offset within the kind's block.
package enum TestOutcome: Int, CaseIterable, Sendable {
    case pending = 0
    case negative = 1
    case positive = 2
    case invalid = 3
    /// The result was consumed (a TAN was issued) or masked by retention; it never changes again.
    case redeemed = 4
}

/// One of the fifteen result codes 0–14.
package struct LabTestResult: Hashable, Sendable, CustomStringConvertible {
    package let kind: TestKind
    package let outcome: TestOutcome

    package init(kind: TestKind, outcome: TestOutcome) {
        self.kind = kind
        self.outcome = outcome
    }

    /// The result for a wire code, or `nil` outside 0–14.
    package init?(code: Int) {
        guard (0...14).contains(code),
            let kind = TestKind(rawValue: code - code % 5),
            let outcome = TestOutcome(rawValue: code % 5)
        else { return nil }
        self.init(kind: kind, outcome: outcome)
    }

    /// The wire code, 0–14.
    package var code: Int { self.kind.rawValue + self.outcome.rawValue }

    /// The code verification-service and the app understand (0–9): PoC-NAT results read as PCR results
    /// (cwa-satellites §1.7, `TestResultService.conversionCheck`).
    package var codeForVerification: Int {
        self.kind == .pointOfCareNAT ? self.outcome.rawValue : self.code
    }

    /// The redeemed code of the same kind. Retention masks with this; the reference writes PCR's 4 even for
    /// rapid tests (cwa-satellites §2.4), which tells an app polling a rapid test that it was a PCR test.
    package var redeemed: LabTestResult { LabTestResult(kind: self.kind, outcome: .redeemed) }

    /// A lab's verdict: negative, positive or invalid (neither pending nor redeemed).
    package var isFinal: Bool { [.negative, .positive, .invalid].contains(self.outcome) }

    /// The pending placeholder of a kind, which a lookup of an unknown id creates.
    package static func pending(_ kind: TestKind) -> LabTestResult { LabTestResult(kind: kind, outcome: .pending) }

    package var description: String { "\(self.code)" }
}
