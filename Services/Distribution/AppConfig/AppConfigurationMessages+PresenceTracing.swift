// Builds the presence-tracing parameters both v2 messages carry.

import ENModels
import Foundation

extension AppConfigurationMessages {
    /// The v2 `PresenceTracingParameters`, the same in both messages.
    static func presenceTracing(_ tracing: AppConfigurationFile.PresenceTracing) -> PresenceTracingParameters {
        var message = PresenceTracingParameters()
        let risk = tracing.riskCalculationParameters
        var riskMessage = PresenceTracingRiskCalculationParameters()
        riskMessage.transmissionRiskValueMapping = risk.transmissionRiskValueMapping.map(Self.transmissionRiskValue)
        riskMessage.normalizedTimePerCheckInToRiskLevelMapping = risk.normalizedTimePerCheckInToRiskLevelMapping.map(
            Self.riskLevelMapping
        )
        riskMessage.normalizedTimePerDayToRiskLevelMapping = risk.normalizedTimePerDayToRiskLevelMapping.map(
            Self.riskLevelMapping
        )
        riskMessage.maxCheckInAgeInDays = UInt32(clamping: risk.maxCheckInAgeInDays)
        message.riskCalculationParameters = riskMessage

        var submission = PresenceTracingSubmissionParameters()
        submission.durationFilters = tracing.submissionParameters.durationFilters.map { filter in
            var entry = PresenceTracingSubmissionParameters.DurationFilter()
            entry.dropIfMinutesInRange = Self.range(filter.dropIfMinutesInRange)
            return entry
        }
        submission.aerosoleDecayLinearFunctions = tracing.submissionParameters.aerosoleDecayLinearFunctions.map {
            function in
            var entry = PresenceTracingSubmissionParameters.AerosoleDecayFunctionLinear()
            entry.minutesRange = Self.range(function.minutesRange)
            entry.slope = function.slope
            entry.intercept = function.intercept
            return entry
        }
        message.submissionParameters = submission

        message.qrCodeErrorCorrectionLevel =
            Self.errorCorrectionLevel(named: tracing.qrCodeErrorCorrectionLevel) ?? .medium
        message.revokedTraceLocationVersions = tracing.revokedTraceLocationVersions.map { UInt32(clamping: $0) }
        message.plausibleDeniabilityParameters = Self.plausibleDeniability(tracing.plausibleDeniabilityParameters)
        message.qrCodeDescriptors = tracing.qrCodeDescriptors.map { descriptor in
            var entry = PresenceTracingQRCodeDescriptor()
            entry.regexPattern = descriptor.regexPattern
            entry.versionGroupIndex = UInt32(clamping: descriptor.versionGroupIndex)
            entry.encodedPayloadGroupIndex = UInt32(clamping: descriptor.encodedPayloadGroupIndex)
            entry.payloadEncoding = Self.payloadEncoding(named: descriptor.payloadEncoding) ?? .base32
            return entry
        }
        return message
    }

    private static func plausibleDeniability(
        _ deniability: AppConfigurationFile.PlausibleDeniability
    ) -> PresenceTracingPlausibleDeniabilityParameters {
        var message = PresenceTracingPlausibleDeniabilityParameters()
        message.checkInSizesInBytes = deniability.checkInSizesInBytes.map { UInt32(clamping: $0) }
        message.probabilityToFakeCheckInsIfNoCheckIns = deniability.probabilityToFakeCheckInsIfNoCheckIns
        message.probabilityToFakeCheckInsIfSomeCheckIns = deniability.probabilityToFakeCheckInsIfSomeCheckIns
        message.numberOfFakeCheckInsFunctionParameters = deniability.numberOfFakeCheckInsFunctionParameters.map {
            function in
            var entry = PresenceTracingPlausibleDeniabilityParameters.NumberOfFakeCheckInsFunctionParameters()
            entry.randomNumberRange = Self.range(function.randomNumberRange)
            entry.p = function.p
            entry.q = function.q
            entry.r = function.r
            entry.s = function.s
            entry.t = function.t
            entry.u = function.u
            entry.a = function.a
            entry.b = function.b
            entry.c = function.c
            return entry
        }
        return message
    }
}
