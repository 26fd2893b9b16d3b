// What one submission writes to the `keys` database (cwa-server §1.8, §1.10).

/// Everything one submission stores, in one transaction: its keys and check-ins with the fields they share.
package struct KeySubmission: Sendable, Equatable, Codable {
    /// `SUBMISSION_TYPE_PCR_TEST`, `SUBMISSION_TYPE_RAPID_TEST`, `SUBMISSION_TYPE_HOST_WARNING`, …
    package var submissionType: String
    package var originCountry: String
    package var visitedCountries: [String]
    package var consentToFederation: Bool
    /// Hours since the epoch (UTC) at submission.
    package var submissionHour: Int64
    /// Real and padding keys, in the (shuffled) order they are inserted.
    package var keys: [DiagnosisKeyRow]
    package var protectedReports: [ProtectedReportRow]
    package var traceWarnings: [TraceWarningRow]
    /// Set for a self-report submission (`cwa-otp`): the limits checked before its authorisation, and a row in
    /// `self_report_submissions` written with its keys.
    package var selfReport: SelfReportLimits?
    /// The NHS app submitted the keys (`nhs_app`): their transmission risk levels are the app's plus one, and every
    /// one is published.
    package var fromNHSApp: Bool

    package init(
        submissionType: String,
        originCountry: String,
        visitedCountries: [String],
        consentToFederation: Bool,
        submissionHour: Int64,
        keys: [DiagnosisKeyRow],
        protectedReports: [ProtectedReportRow] = [],
        traceWarnings: [TraceWarningRow] = [],
        selfReport: SelfReportLimits? = nil,
        fromNHSApp: Bool = false
    ) {
        self.submissionType = submissionType
        self.originCountry = originCountry
        self.visitedCountries = visitedCountries
        self.consentToFederation = consentToFederation
        self.submissionHour = submissionHour
        self.keys = keys
        self.protectedReports = protectedReports
        self.traceWarnings = traceWarnings
        self.selfReport = selfReport
        self.fromNHSApp = fromNHSApp
    }

    /// The first hour (since the epoch) of the UTC day of `submissionHour`.
    package var dayStartHour: Int64 {
        self.submissionHour / 24 * 24
    }
}

/// What a self-report submission must meet before its one-time password is spent (cwa-server §1.4 steps 3 and 5).
package struct SelfReportLimits: Sendable, Equatable, Codable {
    /// The submission is refused once this many keys of any type were submitted on its UTC day (the reference's
    /// `max-keys-per-day`).
    package var maxKeysPerDay: Int

    package init(maxKeysPerDay: Int) {
        self.maxKeysPerDay = maxKeysPerDay
    }
}

/// A diagnosis key as stored.
package struct DiagnosisKeyRow: Sendable, Equatable, Codable {
    package var keyData: [UInt8]
    package var rollingStartIntervalNumber: Int32
    package var rollingPeriod: Int32
    package var transmissionRiskLevel: Int32
    package var daysSinceOnsetOfSymptoms: Int32
    package var reportType: String

    package init(
        keyData: [UInt8],
        rollingStartIntervalNumber: Int32,
        rollingPeriod: Int32,
        transmissionRiskLevel: Int32,
        daysSinceOnsetOfSymptoms: Int32,
        reportType: String
    ) {
        self.keyData = keyData
        self.rollingStartIntervalNumber = rollingStartIntervalNumber
        self.rollingPeriod = rollingPeriod
        self.transmissionRiskLevel = transmissionRiskLevel
        self.daysSinceOnsetOfSymptoms = daysSinceOnsetOfSymptoms
        self.reportType = reportType
    }
}

/// An encrypted check-in as stored.
package struct ProtectedReportRow: Sendable, Equatable, Codable {
    package var locationIDHash: [UInt8]
    package var iv: [UInt8]
    package var encryptedCheckInRecord: [UInt8]
    package var mac: [UInt8]

    package init(locationIDHash: [UInt8], iv: [UInt8], encryptedCheckInRecord: [UInt8], mac: [UInt8]) {
        self.locationIDHash = locationIDHash
        self.iv = iv
        self.encryptedCheckInRecord = encryptedCheckInRecord
        self.mac = mac
    }
}

/// An unencrypted check-in (real or fake) as a trace time interval warning.
package struct TraceWarningRow: Sendable, Equatable, Codable {
    /// SHA-256 of the location id.
    package var traceLocationID: [UInt8]
    package var startIntervalNumber: Int32
    package var period: Int32
    package var transmissionRiskLevel: Int32

    package init(traceLocationID: [UInt8], startIntervalNumber: Int32, period: Int32, transmissionRiskLevel: Int32) {
        self.traceLocationID = traceLocationID
        self.startIntervalNumber = startIntervalNumber
        self.period = period
        self.transmissionRiskLevel = transmissionRiskLevel
    }
}
