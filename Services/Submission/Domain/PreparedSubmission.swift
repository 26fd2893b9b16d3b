// A valid payload turned into the rows to store: keys dropped, derived, enriched and padded, check-ins
// filtered and padded (cwa-server §1.4, §1.6, §1.9, §1.10).

import Crypto
import ENKeyStore
import ENModels
import Foundation

/// A validated submission: everything it stores, in one transaction, and what was left out.
struct PreparedSubmission: Sendable, Equatable {
    var submissionType: String
    var originCountry: String
    var visitedCountries: [String]
    var consentToFederation: Bool
    /// Hours since the epoch (UTC) at submission.
    var submissionHour: Int64
    /// Real and padding keys, shuffled.
    var keys: [DiagnosisKeyRow]
    /// Real keys dropped for being in the future or older than the retention window.
    var droppedKeys = 0
    /// Of a self-report's keys within the retention window, those dropped for being older than
    /// `SubmissionPolicy.selfReportDays` (the answer then carries `cwa-keys-truncated`).
    var truncatedKeys = 0
    /// A self-report's limits, checked before its OTP is redeemed; `nil` for other submissions.
    var selfReport: SelfReportLimits?
    var protectedReports: [ProtectedReportRow] = []
    /// Real and fake trace warnings, shuffled.
    var traceWarnings: [TraceWarningRow] = []
    /// How many of `traceWarnings` stand for a real check-in.
    var realTraceWarnings = 0
    /// Unencrypted check-ins the filters or the daily cap dropped.
    var filteredCheckIns = 0

    /// The rows as the key store takes them.
    var stored: KeySubmission {
        KeySubmission(
            submissionType: self.submissionType,
            originCountry: self.originCountry,
            visitedCountries: self.visitedCountries,
            consentToFederation: self.consentToFederation,
            submissionHour: self.submissionHour,
            keys: self.keys,
            protectedReports: self.protectedReports,
            traceWarnings: self.traceWarnings,
            selfReport: self.selfReport
        )
    }
}

extension PreparedSubmission {
    /// The rows for a validated `payload` submitted at `now`. `random` draws padding key data, fake check-in
    /// jitter and the shuffles; production passes the system's CSPRNG.
    init(
        payload: SubmissionPayload,
        policy: SubmissionPolicy,
        now: Date,
        using random: inout some RandomNumberGenerator
    ) {
        let origin = payload.origin.isEmpty ? policy.originCountry : payload.origin
        self.init(
            submissionType: payload.submissionType.storageName,
            originCountry: origin,
            visitedCountries: Set(payload.visitedCountries + [origin]).sorted(),
            consentToFederation: payload.consentToFederation,
            submissionHour: EpochIntervals.hour(now),
            keys: []
        )
        var kept = Self.keysInWindow(payload.keys, policy: policy, now: now)
        self.droppedKeys = payload.keys.count - kept.count
        if payload.submissionType.isSelfReport {
            // §1.4 step 4: the reference filters the keys the retention window kept a second time, with `srs-days`,
            // and reports only that second filter.
            let recent = Self.keysInWindow(kept, days: policy.selfReportDays, now: now)
            self.truncatedKeys = kept.count - recent.count
            kept = recent
            self.selfReport = SelfReportLimits(maxKeysPerDay: policy.maxKeysPerDay)
        }
        let real = kept.map { Self.row($0, policy: policy) }
        self.keys = Self.padded(real, multiplier: policy.keyPaddingMultiplier, using: &random)
        self.protectedReports = payload.checkInProtectedReports.map {
            ProtectedReportRow(
                locationIDHash: Array($0.locationIDHash),
                iv: Array($0.iv),
                encryptedCheckInRecord: Array($0.encryptedCheckInRecord),
                mac: Array($0.mac)
            )
        }
        if policy.checkIns.unencryptedEnabled {
            let accepted = CheckInFilter.accepted(payload.checkIns, policy: policy.checkIns, now: now)
            self.filteredCheckIns = payload.checkIns.count - accepted.count
            self.realTraceWarnings = accepted.count
            self.traceWarnings = CheckInFilter.warnings(accepted, policy: policy.checkIns, using: &random)
        }
    }

    /// §1.4: keys whose interval starts in the future, or before today's midnight minus the retention days, are
    /// dropped without failing the request.
    static func keysInWindow(
        _ keys: [TemporaryExposureKey],
        policy: SubmissionPolicy,
        now: Date
    ) -> [TemporaryExposureKey] {
        self.keysInWindow(keys, days: policy.retentionDays, now: now)
    }

    /// The keys whose interval starts neither after `now` nor before today's midnight (UTC) minus `days` days.
    static func keysInWindow(_ keys: [TemporaryExposureKey], days: Int, now: Date) -> [TemporaryExposureKey] {
        let current = EpochIntervals.interval(now)
        let oldest = EpochIntervals.midnightInterval(now) - days * EpochIntervals.intervalsPerDay
        return keys.filter { (oldest...current).contains(Int($0.rollingStartIntervalNumber)) }
    }

    /// §1.6: the missing one of TRL and DSOS derived from the other. The payload rules guarantee one is present
    /// and a present TRL is 1…8, which the DSOS map covers entirely.
    static func row(_ key: TemporaryExposureKey, policy: SubmissionPolicy) -> DiagnosisKeyRow {
        let trl =
            key.hasTransmissionRiskLevel
            ? Int(key.transmissionRiskLevel)
            : policy.derivations.trl(forDSOS: Int(key.daysSinceOnsetOfSymptoms), defaultTRL: policy.defaultTRL)
        let dsos =
            key.hasDaysSinceOnsetOfSymptoms
            ? Int(key.daysSinceOnsetOfSymptoms)
            : policy.derivations.dsos(forTRL: trl) ?? policy.derivations.dsos(forTRL: policy.defaultTRL) ?? 0
        return DiagnosisKeyRow(
            keyData: Array(key.keyData),
            rollingStartIntervalNumber: key.rollingStartIntervalNumber,
            rollingPeriod: key.rollingPeriod,
            transmissionRiskLevel: Int32(trl),
            daysSinceOnsetOfSymptoms: Int32(dsos),
            reportType: key.reportType.storageName ?? ReportType.confirmedTest.storageName!
        )
    }

    /// §1.9: `multiplier − 1` copies of every key with fresh random key data, all shuffled so the stored order
    /// does not tell real from padding.
    static func padded(
        _ keys: [DiagnosisKeyRow],
        multiplier: Int,
        using random: inout some RandomNumberGenerator
    ) -> [DiagnosisKeyRow] {
        var rows = keys
        for key in keys {
            for _ in 1..<max(1, multiplier) {
                var copy = key
                copy.keyData = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &random) }
                rows.append(copy)
            }
        }
        rows.shuffle(using: &random)
        return rows
    }
}

/// The deprecated unencrypted check-ins: the daily cap, the filters and the fake padding (§1.10).
enum CheckInFilter {
    /// TRLs whose transmission-risk value is 0 (`trl-value-mapping`): such check-ins cannot warn anyone.
    static let zeroRiskTRLs: Set<UInt32> = [1, 2]

    /// The check-ins to store: none when a day has more than the cap; otherwise those with a risk, not ended
    /// longer ago than the threshold, and not starting in the future. We also drop check-ins that end more than a
    /// day after the submission: the reference has no such filter, but such an end is no real visit, and its
    /// period would not fit the stored column.
    static func accepted(_ checkIns: [CheckIn], policy: CheckInPolicy, now: Date) -> [CheckIn] {
        let perDay = Dictionary(grouping: checkIns) { $0.startIntervalNumber / UInt32(EpochIntervals.intervalsPerDay) }
        if perDay.values.contains(where: { $0.count > policy.maxPerDay }) { return [] }
        let current = EpochIntervals.interval(now)
        let oldestEnd = current - policy.acceptedEventDateThresholdDays * EpochIntervals.intervalsPerDay
        let latestEnd = current + EpochIntervals.intervalsPerDay
        return checkIns.filter {
            !self.zeroRiskTRLs.contains($0.transmissionRiskLevel)
                && (oldestEnd...latestEnd).contains(Int($0.endIntervalNumber))
                && Int($0.startIntervalNumber) <= current
        }
    }

    /// Trace warnings for the accepted check-ins plus `paddingMultiplier` fakes each, shuffled. A fake's location
    /// id is `locationId ‖ pepper ‖ counter`; its start moves by up to ±5 intervals but not before its day's
    /// midnight, and its period by up to ±2 but not below 2 (a whole-day period stays whole).
    static func warnings(
        _ checkIns: [CheckIn],
        policy: CheckInPolicy,
        using random: inout some RandomNumberGenerator
    ) -> [TraceWarningRow] {
        var rows: [TraceWarningRow] = []
        for checkIn in checkIns {
            let start = Int(checkIn.startIntervalNumber)
            let period = Int(checkIn.endIntervalNumber) - start
            let trl = Int32(checkIn.transmissionRiskLevel)
            rows.append(
                TraceWarningRow(
                    traceLocationID: self.hash(checkIn.locationID),
                    startIntervalNumber: Int32(start),
                    period: Int32(period),
                    transmissionRiskLevel: trl
                )
            )
            for counter in 0..<policy.paddingMultiplier {
                let midnight = start / EpochIntervals.intervalsPerDay * EpochIntervals.intervalsPerDay
                let fakeStart = max(midnight, start + Int.random(in: -5...5, using: &random))
                let fakePeriod =
                    period == EpochIntervals.intervalsPerDay
                    ? period : max(2, period + Int.random(in: -2...2, using: &random))
                let location = Array(checkIn.locationID) + policy.paddingPepper + Array(String(counter).utf8)
                rows.append(
                    TraceWarningRow(
                        traceLocationID: self.hash(location),
                        startIntervalNumber: Int32(fakeStart),
                        period: Int32(fakePeriod),
                        transmissionRiskLevel: trl
                    )
                )
            }
        }
        rows.shuffle(using: &random)
        return rows
    }

    static func hash(_ bytes: some DataProtocol) -> [UInt8] {
        Array(SHA256.hash(data: bytes))
    }
}
