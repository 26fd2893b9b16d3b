// The rows of federation's tables: keys waiting for upload, and the batches the gateway announced.

import ENModels
import Foundation

/// A row of `federation_upload_key`: a consented PCR key mirrored at submission, not yet taken by the gateway.
struct UploadKey: Sendable, Equatable {
    var keyData: [UInt8]
    var submissionType: String
    var rollingStartIntervalNumber: Int32
    var rollingPeriod: Int32
    /// Hours since the epoch (UTC).
    var submissionHour: Int64
    var transmissionRiskLevel: Int32
    var originCountry: String
    var visitedCountries: [String]
    var reportType: String
    var daysSinceOnsetOfSymptoms: Int32

    /// The key as the gateway receives it: stored TRL, DSOS and report type, visited countries and origin.
    var federationKey: FederationDiagnosisKey {
        var key = FederationDiagnosisKey()
        key.keyData = Data(self.keyData)
        key.rollingStartIntervalNumber = UInt32(bitPattern: self.rollingStartIntervalNumber)
        key.rollingPeriod = UInt32(bitPattern: self.rollingPeriod)
        key.transmissionRiskLevel = self.transmissionRiskLevel
        key.visitedCountries = self.visitedCountries
        key.origin = self.originCountry
        key.reportType = ReportType(storageName: self.reportType) ?? .confirmedTest
        key.daysSinceOnsetOfSymptoms = self.daysSinceOnsetOfSymptoms
        return key
    }
}

/// The states of a batch announced by the gateway (cwa-server §5.4).
enum BatchStatus: String, Sendable, CaseIterable {
    case unprocessed = "UNPROCESSED"
    case processed = "PROCESSED"
    /// Stored, but some keys were refused.
    case processedWithError = "PROCESSED_WITH_ERROR"
    /// Failed once; retried at the next run.
    case error = "ERROR"
    /// Failed again; left alone.
    case errorWontRetry = "ERROR_WONT_RETRY"
}

/// A batch the gateway announced (by callback or a download's `nextBatchTag`).
struct BatchInfo: Sendable, Equatable {
    var tag: String
    /// The UTC day, `yyyy-MM-dd`.
    var day: String
    var status: BatchStatus
}
