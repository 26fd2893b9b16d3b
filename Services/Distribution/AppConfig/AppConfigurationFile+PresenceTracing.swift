// The presence-tracing (event check-in) part of the app-configuration file.

import Foundation

extension AppConfigurationFile {
    /// The v2 `PresenceTracingParameters` (event check-ins).
    struct PresenceTracing: Codable, Sendable {
        var riskCalculationParameters: PresenceTracingRiskCalculation
        var submissionParameters: PresenceTracingSubmission
        /// `MEDIUM`, `LOW`, `QUANTILE` or `HIGH`.
        var qrCodeErrorCorrectionLevel: String
        @WholeNumbers var revokedTraceLocationVersions: [Int32]
        var plausibleDeniabilityParameters: PlausibleDeniability
        var qrCodeDescriptors: [QRCodeDescriptor]
    }

    /// Risk of a check-in overlapping a warned one.
    struct PresenceTracingRiskCalculation: Codable, Sendable {
        var transmissionRiskValueMapping: [TransmissionRiskValue]
        var normalizedTimePerCheckInToRiskLevelMapping: [NormalizedTimeToRiskLevel]
        var normalizedTimePerDayToRiskLevelMapping: [NormalizedTimeToRiskLevel]
        /// 1…14.
        @WholeNumber var maxCheckInAgeInDays: Int32
    }

    /// Which check-ins a phone submits, and how their durations are weighted.
    struct PresenceTracingSubmission: Codable, Sendable {
        var durationFilters: [DurationFilter]
        var aerosoleDecayLinearFunctions: [AerosoleDecayFunction]
    }

    /// Check-ins lasting this many minutes are not submitted.
    struct DurationFilter: Codable, Sendable {
        var dropIfMinutesInRange: Interval
    }

    /// `slope × minutes + intercept` for durations in `minutesRange`.
    struct AerosoleDecayFunction: Codable, Sendable {
        var minutesRange: Interval
        var slope: Double
        var intercept: Double
    }

    /// Fake check-ins that make a submission without check-ins look like one with them.
    struct PlausibleDeniability: Codable, Sendable {
        @WholeNumbers var checkInSizesInBytes: [Int32]
        var probabilityToFakeCheckInsIfNoCheckIns: Double
        var probabilityToFakeCheckInsIfSomeCheckIns: Double
        var numberOfFakeCheckInsFunctionParameters: [FakeCheckInsFunction]
    }

    /// Coefficients of the fake check-in count for random numbers in `randomNumberRange`.
    struct FakeCheckInsFunction: Codable, Sendable {
        var randomNumberRange: Interval
        var p: Double
        var q: Double
        var r: Double
        var s: Double
        var t: Double
        var u: Double
        var a: Double
        var b: Double
        var c: Double
    }

    /// How the apps recognise a scanned event QR code and find its payload.
    struct QRCodeDescriptor: Codable, Sendable {
        var regexPattern: String
        @WholeNumber var versionGroupIndex: Int32
        @WholeNumber var encodedPayloadGroupIndex: Int32
        /// `BASE32` or `BASE64`.
        var payloadEncoding: String
    }
}
