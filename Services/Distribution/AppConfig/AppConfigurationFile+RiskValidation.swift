// The checks of the risk-calculation and presence-tracing parts of the app-configuration file.

import ENModels
import Foundation

/// The shared checks, by a shorter name.
private typealias Rules = AppConfigurationRules

extension AppConfigurationFile {
    static func validate(_ risk: RiskCalculation, _ field: String) throws(AppConfigurationError) {
        for (index, filter) in risk.minutesAtAttenuationFilters.enumerated() {
            try Rules.interval(
                filter.attenuationRange,
                "\(field).minutesAtAttenuationFilters[\(index)].attenuationRange"
            )
            try Rules.interval(
                filter.dropIfMinutesInRange,
                "\(field).minutesAtAttenuationFilters[\(index)].dropIfMinutesInRange"
            )
        }
        for (index, filter) in risk.trlFilters.enumerated() {
            try Rules.interval(filter.dropIfTrlInRange, "\(field).trlFilters[\(index)].dropIfTrlInRange")
        }
        // Without a weighted attenuation range no exposure ever counts.
        try Rules.nonEmpty(
            risk.minutesAtAttenuationWeights.count,
            field + ".minutesAtAttenuationWeights",
            holding: "weight"
        )
        for (index, weight) in risk.minutesAtAttenuationWeights.enumerated() {
            try Rules.interval(
                weight.attenuationRange,
                "\(field).minutesAtAttenuationWeights[\(index)].attenuationRange"
            )
            try Rules.weight(weight.weight, "\(field).minutesAtAttenuationWeights[\(index)].weight")
        }
        try Rules.riskLevelMapping(
            risk.normalizedTimePerEWToRiskLevelMapping,
            field + ".normalizedTimePerEWToRiskLevelMapping"
        )
        try Rules.riskLevelMapping(
            risk.normalizedTimePerDayToRiskLevelMapping,
            field + ".normalizedTimePerDayToRiskLevelMapping"
        )
        try Rules.transmissionRiskValues(risk.transmissionRiskValueMapping, field + ".transmissionRiskValueMapping")
        // ENF keeps keys for 14 days; older encounters cannot be matched anyway.
        try Rules.integer(risk.maxEncounterAgeInDays, in: 1...14, field + ".maxEncounterAgeInDays")
    }

    /// The apps read a key's TRL back as infectiousness offset + report-type offset, the infectiousness coming from
    /// the platform's DSOS map; for every TRL the distribution publishes, that must give the TRL again.
    static func validate(
        _ encoding: TransmissionRiskLevelEncoding,
        _ field: String,
        infectiousness map: [String: Int32],
        mappedAt mapField: String
    ) throws(AppConfigurationError) {
        let infectiousness = Self.integerKeyed(map)
        for trl: Int32 in 1...8 {
            // The same re-encoding the export applies to every key (cwa-server §3.2).
            let published = TRLEncoding.exported(trl: trl)
            let dsos = Int32(clamping: published.daysSinceOnsetOfSymptoms)
            let infectiousnessOffset: Int32
            switch infectiousness[dsos] {
            case 1?: infectiousnessOffset = encoding.infectiousnessOffsetStandard
            case 2?: infectiousnessOffset = encoding.infectiousnessOffsetHigh
            default:
                throw AppConfigurationError(
                    field: mapField,
                    problem: "maps no infectiousness for DSOS \(dsos), which the distribution publishes for TRL \(trl)"
                )
            }
            let reportTypeOffset: Int32
            switch published.reportType {
            case .confirmedTest: reportTypeOffset = encoding.reportTypeOffsetConfirmedTest
            case .confirmedClinicalDiagnosis: reportTypeOffset = encoding.reportTypeOffsetConfirmedClinicalDiagnosis
            case .selfReport: reportTypeOffset = encoding.reportTypeOffsetSelfReport
            case .recursive: reportTypeOffset = encoding.reportTypeOffsetRecursive
            default:
                throw AppConfigurationError(
                    field: field,
                    problem: "has no offset for report type \(published.reportType) (TRL \(trl))"
                )
            }
            // Int64, so offsets near Int32's limits cannot overflow.
            let decoded = Int64(infectiousnessOffset) + Int64(reportTypeOffset)
            try Rules.require(
                decoded == Int64(trl),
                field,
                "reads TRL \(trl) (published as DSOS \(dsos), report type \(published.reportType)) back as \(decoded) with \(mapField)"
            )
        }
    }

    // MARK: - Presence tracing

    static func validate(_ tracing: PresenceTracing, _ field: String) throws(AppConfigurationError) {
        let risk = tracing.riskCalculationParameters
        let riskField = field + ".riskCalculationParameters"
        try Rules.transmissionRiskValues(risk.transmissionRiskValueMapping, riskField + ".transmissionRiskValueMapping")
        try Rules.riskLevelMapping(
            risk.normalizedTimePerCheckInToRiskLevelMapping,
            riskField + ".normalizedTimePerCheckInToRiskLevelMapping"
        )
        try Rules.riskLevelMapping(
            risk.normalizedTimePerDayToRiskLevelMapping,
            riskField + ".normalizedTimePerDayToRiskLevelMapping"
        )
        try Rules.integer(risk.maxCheckInAgeInDays, in: 1...14, riskField + ".maxCheckInAgeInDays")

        let submission = tracing.submissionParameters
        for (index, filter) in submission.durationFilters.enumerated() {
            try Rules.interval(
                filter.dropIfMinutesInRange,
                "\(field).submissionParameters.durationFilters[\(index)].dropIfMinutesInRange"
            )
        }
        for (index, function) in submission.aerosoleDecayLinearFunctions.enumerated() {
            let functionField = "\(field).submissionParameters.aerosoleDecayLinearFunctions[\(index)]"
            try Rules.interval(function.minutesRange, functionField + ".minutesRange")
            try Rules.number(function.slope, functionField + ".slope")
            try Rules.number(function.intercept, functionField + ".intercept")
        }

        try Rules.require(
            AppConfigurationMessages.errorCorrectionLevel(named: tracing.qrCodeErrorCorrectionLevel) != nil,
            field + ".qrCodeErrorCorrectionLevel",
            "must be MEDIUM, LOW, QUANTILE or HIGH, is '\(tracing.qrCodeErrorCorrectionLevel)'"
        )
        for (index, version) in tracing.revokedTraceLocationVersions.enumerated() {
            try Rules.integer(version, in: Rules.nonNegative, "\(field).revokedTraceLocationVersions[\(index)]")
        }
        try Self.validate(tracing.plausibleDeniabilityParameters, field + ".plausibleDeniabilityParameters")
        try Rules.nonEmpty(tracing.qrCodeDescriptors.count, field + ".qrCodeDescriptors", holding: "descriptor")
        for (index, descriptor) in tracing.qrCodeDescriptors.enumerated() {
            try Self.validate(descriptor, "\(field).qrCodeDescriptors[\(index)]")
        }
    }

    private static func validate(_ deniability: PlausibleDeniability, _ field: String) throws(AppConfigurationError) {
        for (index, size) in deniability.checkInSizesInBytes.enumerated() {
            try Rules.integer(size, in: Rules.nonNegative, "\(field).checkInSizesInBytes[\(index)]")
        }
        try Rules.number(
            deniability.probabilityToFakeCheckInsIfNoCheckIns,
            in: 0...1,
            field + ".probabilityToFakeCheckInsIfNoCheckIns"
        )
        try Rules.number(
            deniability.probabilityToFakeCheckInsIfSomeCheckIns,
            in: 0...1,
            field + ".probabilityToFakeCheckInsIfSomeCheckIns"
        )
        // The apps need a function for every random number they draw (the reference's rule: at least one entry).
        let functionsField = field + ".numberOfFakeCheckInsFunctionParameters"
        try Rules.nonEmpty(
            deniability.numberOfFakeCheckInsFunctionParameters.count,
            functionsField,
            holding: "function"
        )
        for (index, function) in deniability.numberOfFakeCheckInsFunctionParameters.enumerated() {
            let functionField = "\(functionsField)[\(index)]"
            try Rules.interval(function.randomNumberRange, functionField + ".randomNumberRange")
            let coefficients: [(String, Double)] = [
                ("p", function.p), ("q", function.q), ("r", function.r), ("s", function.s), ("t", function.t),
                ("u", function.u), ("a", function.a), ("b", function.b), ("c", function.c),
            ]
            for (name, value) in coefficients {
                try Rules.number(value, "\(functionField).\(name)")
            }
        }
    }

    /// The pattern must compile and have the capture groups the indices name.
    private static func validate(_ descriptor: QRCodeDescriptor, _ field: String) throws(AppConfigurationError) {
        try Rules.nonBlank(descriptor.regexPattern, field + ".regexPattern")
        let groups: Int
        do {
            groups = try NSRegularExpression(pattern: descriptor.regexPattern).numberOfCaptureGroups
        } catch {
            throw AppConfigurationError(field: field + ".regexPattern", problem: "is not a valid regular expression")
        }
        try Rules.require(
            groups >= 2,
            field + ".regexPattern",
            "has \(groups) capture groups; it needs one for the version and one for the payload"
        )
        let indices = [
            ("versionGroupIndex", descriptor.versionGroupIndex),
            ("encodedPayloadGroupIndex", descriptor.encodedPayloadGroupIndex),
        ]
        for (name, index) in indices {
            // The apps count capture groups from 0.
            try Rules.integer(index, in: 0...Int64(groups - 1), "\(field).\(name)")
        }
        try Rules.require(
            descriptor.versionGroupIndex != descriptor.encodedPayloadGroupIndex,
            field + ".encodedPayloadGroupIndex",
            "must differ from versionGroupIndex"
        )
        try Rules.require(
            AppConfigurationMessages.payloadEncoding(named: descriptor.payloadEncoding) != nil,
            field + ".payloadEncoding",
            "must be BASE32 or BASE64, is '\(descriptor.payloadEncoding)'"
        )
    }
}
