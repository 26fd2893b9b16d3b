// The names under which enum values of the wire format are stored in the `keys` database (cwa-server §1.8).

/// Submission types are stored by their proto name (`SUBMISSION_TYPE_PCR_TEST`), as in the reference schema.
extension SubmissionPayload.SubmissionType {
    package var storageName: String {
        switch self {
        case .pcrTest: "SUBMISSION_TYPE_PCR_TEST"
        case .rapidTest: "SUBMISSION_TYPE_RAPID_TEST"
        case .hostWarning: "SUBMISSION_TYPE_HOST_WARNING"
        case .srsSelfTest: "SUBMISSION_TYPE_SRS_SELF_TEST"
        case .srsRegisteredRat: "SUBMISSION_TYPE_SRS_REGISTERED_RAT"
        case .srsUnregisteredRat: "SUBMISSION_TYPE_SRS_UNREGISTERED_RAT"
        case .srsRegisteredPcr: "SUBMISSION_TYPE_SRS_REGISTERED_PCR"
        case .srsUnregisteredPcr: "SUBMISSION_TYPE_SRS_UNREGISTERED_PCR"
        case .srsRapidPcr: "SUBMISSION_TYPE_SRS_RAPID_PCR"
        case .srsOther: "SUBMISSION_TYPE_SRS_OTHER"
        }
    }

    package init?(storageName: String) {
        guard let type = Self.allCases.first(where: { $0.storageName == storageName }) else { return nil }
        self = type
    }
}

/// Report types are stored by their proto name (`CONFIRMED_TEST`). The enum comes from a proto3 file, so a
/// decoded value may be one this version does not know: it has no storage name.
extension ReportType {
    package var storageName: String? {
        switch self {
        case .unknown: "UNKNOWN"
        case .confirmedTest: "CONFIRMED_TEST"
        case .confirmedClinicalDiagnosis: "CONFIRMED_CLINICAL_DIAGNOSIS"
        case .selfReport: "SELF_REPORT"
        case .recursive: "RECURSIVE"
        case .revoked: "REVOKED"
        case .UNRECOGNIZED: nil
        }
    }

    package init?(storageName: String) {
        guard let type = Self.allCases.first(where: { $0.storageName == storageName }) else { return nil }
        self = type
    }
}
