// The validation rules of a submission payload, each small and named, checked in the reference's order
// (cwa-server §1.5).

import ENModels

/// A rule a payload broke: its name (a metric label) and what the client is told.
struct RuleViolation: Error, Equatable {
    let rule: String
    let message: String
}

/// One validation rule: `check` answers the problem with a payload, or nil when it holds.
struct PayloadRule: Sendable {
    let name: String
    let check: @Sendable (SubmissionPayload, SubmissionPolicy) -> String?

    /// The first rule of `rules`, in order, that `payload` breaks.
    static func firstViolation(
        of rules: [PayloadRule],
        in payload: SubmissionPayload,
        policy: SubmissionPolicy
    ) -> RuleViolation? {
        for rule in rules {
            if let message = rule.check(payload, policy) { return RuleViolation(rule: rule.name, message: message) }
        }
        return nil
    }
}

extension PayloadRule {
    /// A real key submission: rules 1–11 of §1.5, then the entity rules of `DiagnosisKey` that the list does not
    /// cover already (key length, positive start, a known report type).
    static let diagnosisKeys: [PayloadRule] = [
        .rollingStartAtMidnight, .keyCount, .origin, .visitedCountries, .riskOrOnset, .transmissionRiskLevel,
        .daysSinceOnset, .plainCheckIns, .checkInCount, .protectedReports, .rollingPeriod, .keySubmissionType,
        .keyLength, .positiveRollingStart, .knownReportType,
    ]

    /// A self-report submission (`cwa-otp`): the key rules, with rule 11 asking for a self-report type instead.
    static let selfReport: [PayloadRule] = [
        .rollingStartAtMidnight, .keyCount, .origin, .visitedCountries, .riskOrOnset, .transmissionRiskLevel,
        .daysSinceOnset, .plainCheckIns, .checkInCount, .protectedReports, .rollingPeriod, .selfReportSubmissionType,
        .keyLength, .positiveRollingStart, .knownReportType,
    ]

    /// Submission on behalf of an event's guests (§1.5, last paragraph).
    static let onBehalf: [PayloadRule] = [
        .noKeys, .noVisitedCountries, .noConsent, .hostWarningType, .oneLocation, .protectedReportsPresent,
        .oneLocationHash, .plainCheckIns, .checkInCount, .protectedReports,
    ]

    // MARK: Keys

    /// Rule 1: keys start at midnight UTC, a multiple of the longest rolling period.
    static let rollingStartAtMidnight = PayloadRule(name: "rolling_start_at_midnight") { payload, policy in
        payload.keys.allSatisfy { Int($0.rollingStartIntervalNumber) % policy.maxRollingPeriod == 0 }
            ? nil
            : "every key's rollingStartIntervalNumber must be a multiple of \(policy.maxRollingPeriod) (midnight UTC)"
    }

    /// Rule 2: at least one key, at most `maxKeys`.
    static let keyCount = PayloadRule(name: "key_count") { payload, policy in
        (1...policy.maxKeys).contains(payload.keys.count)
            ? nil : "a submission holds 1 to \(policy.maxKeys) keys, not \(payload.keys.count)"
    }

    /// Rule 3: the origin, when given, is this country.
    static let origin = PayloadRule(name: "origin") { payload, policy in
        payload.origin.isEmpty || payload.origin == policy.originCountry
            ? nil : "origin must be empty or \(policy.originCountry)"
    }

    /// Rule 4: every visited country is supported (the list may be empty).
    static let visitedCountries = PayloadRule(name: "visited_countries") { payload, policy in
        payload.visitedCountries.allSatisfy(policy.supportedCountries.contains)
            ? nil
            : "visitedCountries may name only supported countries (\(policy.supportedCountries.sorted().joined(separator: ",")))"
    }

    /// Rule 5: a key carries a transmission risk level, days since onset of symptoms, or both.
    static let riskOrOnset = PayloadRule(name: "risk_or_onset") { payload, _ in
        payload.keys.allSatisfy { $0.hasTransmissionRiskLevel || $0.hasDaysSinceOnsetOfSymptoms }
            ? nil : "every key needs transmissionRiskLevel or daysSinceOnsetOfSymptoms"
    }

    /// Rule 6: a given TRL is 1…8.
    static let transmissionRiskLevel = PayloadRule(name: "transmission_risk_level") { payload, _ in
        payload.keys.allSatisfy { !$0.hasTransmissionRiskLevel || (1...8).contains($0.transmissionRiskLevel) }
            ? nil : "transmissionRiskLevel must be between 1 and 8"
    }

    /// Rule 7: a given DSOS is −15…4000.
    static let daysSinceOnset = PayloadRule(name: "days_since_onset") { payload, _ in
        payload.keys.allSatisfy {
            !$0.hasDaysSinceOnsetOfSymptoms || (-15...4000).contains($0.daysSinceOnsetOfSymptoms)
        }
            ? nil : "daysSinceOnsetOfSymptoms must be between -15 and 4000"
    }

    /// Rule 10: the rolling period is within the configured bounds (absent means 144, the proto default).
    static let rollingPeriod = PayloadRule(name: "rolling_period") { payload, policy in
        payload.keys.allSatisfy { (policy.minRollingPeriod...policy.maxRollingPeriod).contains(Int($0.rollingPeriod)) }
            ? nil : "rollingPeriod must be between \(policy.minRollingPeriod) and \(policy.maxRollingPeriod)"
    }

    /// Rule 11 with the entity rule that excludes host warnings: a key submission with a TAN is a PCR or a rapid
    /// test. Self-report types 3…9 need `cwa-otp` (`selfReportSubmissionType`).
    static let keySubmissionType = PayloadRule(name: "submission_type") { payload, _ in
        [.pcrTest, .rapidTest].contains(payload.submissionType)
            ? nil : "submissionType must be PCR_TEST or RAPID_TEST with a TAN"
    }

    /// Rule 11 for `cwa-otp`: a self-report has one of the self-report types 3…9.
    static let selfReportSubmissionType = PayloadRule(name: "submission_type") { payload, _ in
        payload.submissionType.isSelfReport ? nil : "submissionType must be a self-report type (3 to 9) with cwa-otp"
    }

    /// Entity rule: key data is exactly 16 bytes.
    static let keyLength = PayloadRule(name: "key_length") { payload, _ in
        payload.keys.allSatisfy { $0.keyData.count == 16 } ? nil : "keyData must be exactly 16 bytes"
    }

    /// Entity rule: the rolling start interval is after the epoch.
    static let positiveRollingStart = PayloadRule(name: "positive_rolling_start") { payload, _ in
        payload.keys.allSatisfy { $0.rollingStartIntervalNumber > 0 }
            ? nil : "rollingStartIntervalNumber must be positive"
    }

    /// A report type this version knows (the enum is open, so a newer client could send another): it must
    /// have a name to be stored under.
    static let knownReportType = PayloadRule(name: "report_type") { payload, _ in
        payload.keys.allSatisfy { $0.reportType.storageName != nil } ? nil : "reportType is not a known report type"
    }

    // MARK: Check-ins

    /// Rule 8: a deprecated plain check-in has a valid TRL, a 32-byte location id and a non-empty interval.
    /// Our limit, beyond the reference (which bounds check-ins by the request size only): at most
    /// `maxPerSubmission` encrypted and as many unencrypted check-ins, so that the counts an answer reports fit
    /// its fixed-width headers.
    static let checkInCount = PayloadRule(name: "check_in_count") { payload, policy in
        let limit = policy.checkIns.maxPerSubmission
        return payload.checkIns.count <= limit && payload.checkInProtectedReports.count <= limit
            ? nil : "a submission holds at most \(limit) checkIns and \(limit) checkInProtectedReports"
    }

    static let plainCheckIns = PayloadRule(name: "check_ins") { payload, _ in
        payload.checkIns.allSatisfy {
            (1...8).contains($0.transmissionRiskLevel) && $0.locationID.count == 32 && $0.startIntervalNumber > 0
                && $0.endIntervalNumber >= $0.startIntervalNumber
        }
            ? nil
            : "checkIns need transmissionRiskLevel 1-8, a 32-byte locationId, startIntervalNumber > 0 and end >= start"
    }

    /// Rule 9: an encrypted check-in's parts have their exact lengths. The reference's message says 32 bytes for
    /// the iv but its check, which we follow, is 16 (cwa-server §8.4).
    static let protectedReports = PayloadRule(name: "check_in_protected_reports") { payload, _ in
        payload.checkInProtectedReports.allSatisfy {
            $0.locationIDHash.count == 32 && $0.iv.count == 16 && $0.mac.count == 32
                && $0.encryptedCheckInRecord.count == 16
        }
            ? nil
            : "checkInProtectedReports need a 32-byte locationIdHash, a 16-byte iv, a 32-byte mac and a 16-byte encryptedCheckInRecord"
    }

    // MARK: Submission on behalf

    static let noKeys = PayloadRule(name: "on_behalf_no_keys") { payload, _ in
        payload.keys.isEmpty ? nil : "a submission on behalf carries no keys"
    }

    static let noVisitedCountries = PayloadRule(name: "on_behalf_no_visited_countries") { payload, _ in
        payload.visitedCountries.isEmpty ? nil : "a submission on behalf carries no visitedCountries"
    }

    static let noConsent = PayloadRule(name: "on_behalf_no_consent") { payload, _ in
        payload.consentToFederation
            ? "a submission on behalf is never federated: consentToFederation must be false" : nil
    }

    static let hostWarningType = PayloadRule(name: "on_behalf_submission_type") { payload, _ in
        payload.submissionType == .hostWarning ? nil : "a submission on behalf has submissionType HOST_WARNING"
    }

    static let oneLocation = PayloadRule(name: "on_behalf_one_location") { payload, _ in
        Set(payload.checkIns.map(\.locationID)).count <= 1
            ? nil : "all checkIns of a submission on behalf share one locationId"
    }

    static let protectedReportsPresent = PayloadRule(name: "on_behalf_reports_present") { payload, _ in
        payload.checkInProtectedReports.isEmpty ? "a submission on behalf needs checkInProtectedReports" : nil
    }

    static let oneLocationHash = PayloadRule(name: "on_behalf_one_location_hash") { payload, _ in
        Set(payload.checkInProtectedReports.map(\.locationIDHash)).count == 1
            ? nil : "all checkInProtectedReports of a submission on behalf share one locationIdHash"
    }
}
