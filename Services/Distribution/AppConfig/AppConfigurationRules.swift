// The reusable checks behind the app-configuration validation: each throws at the field it was given.

import Foundation

/// Small checks shared by the parts of `AppConfigurationFile+Validation.swift`. Every check names the field (a path
/// as in `AppConfigurationError`) and says what is wrong in words a config editor understands.
enum AppConfigurationRules {
    /// Bounds for `integer(_:in:_:)`: zero or more, and one or more.
    static let nonNegative: ClosedRange<Int64> = 0...Int64.max
    static let positive: ClosedRange<Int64> = 1...Int64.max

    /// Throws `problem` at `field` unless `condition` holds.
    static func require(
        _ condition: Bool,
        _ field: String,
        _ problem: @autoclosure () -> String
    ) throws(AppConfigurationError) {
        if !condition {
            throw AppConfigurationError(field: field, problem: problem())
        }
    }

    /// An integer within `bounds` (`Int64.min`/`Int64.max` stand for no bound on that side).
    static func integer(
        _ value: some BinaryInteger,
        in bounds: ClosedRange<Int64>,
        _ field: String
    ) throws(AppConfigurationError) {
        let number = Int64(clamping: value)
        try Self.require(bounds.contains(number), field, "must be \(Self.describe(bounds)), is \(value)")
    }

    /// A finite number within `bounds`.
    static func number(
        _ value: Double,
        in bounds: ClosedRange<Double> = -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude,
        _ field: String
    ) throws(AppConfigurationError) {
        try Self.require(value.isFinite, field, "must be a finite number, is \(value)")
        try Self.require(bounds.contains(value), field, "must be \(Self.describe(bounds)), is \(Self.format(value))")
    }

    /// A non-negative finite weight.
    static func weight(_ value: Double, _ field: String) throws(AppConfigurationError) {
        try Self.number(value, in: 0...Double.greatestFiniteMagnitude, field)
    }

    /// A proto `Range`: finite bounds, min not above max, and not empty.
    static func interval(_ interval: AppConfigurationFile.Interval, _ field: String) throws(AppConfigurationError) {
        try Self.number(interval.min, field + ".min")
        try Self.number(interval.max, field + ".max")
        try Self.require(
            interval.min <= interval.max,
            field,
            "min \(Self.format(interval.min)) is above max \(Self.format(interval.max))"
        )
        let hasOpenBound = interval.minExclusive == true || interval.maxExclusive == true
        try Self.require(
            interval.min < interval.max || !hasOpenBound,
            field,
            "is empty: min and max are both \(Self.format(interval.min)) and a bound is exclusive"
        )
    }

    /// A string with something other than white space in it.
    static func nonBlank(_ value: String, _ field: String) throws(AppConfigurationError) {
        try Self.require(!value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, field, "must not be empty")
    }

    /// A list with at least one element.
    static func nonEmpty(_ count: Int, _ field: String, holding noun: String) throws(AppConfigurationError) {
        try Self.require(count > 0, field, "must hold at least one \(noun)")
    }

    /// Three attenuation thresholds in dB (0…255), strictly ascending: what both ENF implementations accept.
    static func attenuationThresholds(_ thresholds: [Int32], _ field: String) throws(AppConfigurationError) {
        try Self.require(thresholds.count == 3, field, "must hold 3 thresholds, holds \(thresholds.count)")
        for (index, threshold) in thresholds.enumerated() {
            try Self.integer(threshold, in: 0...255, "\(field)[\(index)]")
            if index > 0 {
                let previous = thresholds[index - 1]
                try Self.require(
                    threshold > previous,
                    "\(field)[\(index)]",
                    "\(threshold) is not above the one before it, \(previous)"
                )
            }
        }
    }

    /// The entries of a JSON map whose keys are integers within `bounds`, in key order, each with its own path.
    /// `noun` names what a key stands for ("DSOS", "report type").
    static func integerKeys<Value>(
        _ map: [String: Value],
        in bounds: ClosedRange<Int64>,
        naming noun: String,
        _ field: String
    ) throws(AppConfigurationError) -> [(key: Int32, value: Value, field: String)] {
        var entries: [(key: Int32, value: Value, field: String)] = []
        var seen: Set<Int32> = []
        for (key, value) in map.sorted(by: { $0.key < $1.key }) {
            let entryField = AppConfigurationError.appending(key, to: field)
            guard let number = Int32(key) else {
                throw AppConfigurationError(field: entryField, problem: "key '\(key)' is not an integer \(noun)")
            }
            try Self.require(
                bounds.contains(Int64(number)),
                entryField,
                "\(noun) \(number) must be \(Self.describe(bounds))"
            )
            try Self.require(seen.insert(number).inserted, entryField, "names \(noun) \(number) a second time")
            entries.append((key: number, value: value, field: entryField))
        }
        return entries.sorted { $0.key < $1.key }
    }

    /// A DSOS → infectiousness map: DSOS -14…14, infectiousness 1 (standard) or 2 (high), at least one entry.
    static func infectiousnessMap(_ map: [String: Int32], _ field: String) throws(AppConfigurationError) {
        try Self.require(!map.isEmpty, field, "must map at least one DSOS to an infectiousness")
        for entry in try Self.integerKeys(map, in: -14...14, naming: "DSOS", field) {
            try Self.require(
                [1, 2].contains(entry.value),
                entry.field,
                "infectiousness \(entry.value) is not 1 (standard) or 2 (high)"
            )
        }
    }

    /// A TRL → transmission risk value list: TRLs 1…8, each exactly once, values at least 0.
    static func transmissionRiskValues(
        _ mapping: [AppConfigurationFile.TransmissionRiskValue],
        _ field: String
    ) throws(AppConfigurationError) {
        var seen: Set<Int32> = []
        for (index, entry) in mapping.enumerated() {
            let levelField = "\(field)[\(index)].transmissionRiskLevel"
            try Self.integer(entry.transmissionRiskLevel, in: 1...8, levelField)
            try Self.require(
                seen.insert(entry.transmissionRiskLevel).inserted,
                levelField,
                "TRL \(entry.transmissionRiskLevel) is mapped a second time"
            )
            try Self.weight(entry.transmissionRiskValue, "\(field)[\(index)].transmissionRiskValue")
        }
        if let missing = (1...8).first(where: { !seen.contains(Int32($0)) }) {
            throw AppConfigurationError(field: field, problem: "TRL \(missing) is not mapped")
        }
    }

    /// A normalised time → risk level list: at least one entry, valid ranges, levels `LOW` or `HIGH`.
    static func riskLevelMapping(
        _ mapping: [AppConfigurationFile.NormalizedTimeToRiskLevel],
        _ field: String
    ) throws(AppConfigurationError) {
        try Self.nonEmpty(mapping.count, field, holding: "normalised time range")
        for (index, entry) in mapping.enumerated() {
            try Self.interval(entry.normalizedTimeRange, "\(field)[\(index)].normalizedTimeRange")
            try Self.require(
                AppConfigurationMessages.riskLevel(named: entry.riskLevel) != nil,
                "\(field)[\(index)].riskLevel",
                "must be LOW or HIGH, is '\(entry.riskLevel)'"
            )
        }
    }

    // MARK: - Wording

    /// `73`, not `73.0`, for whole numbers; Swift's shortest form otherwise.
    static func format(_ value: Double) -> String {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
            return String(Int64(value))
        }
        return "\(value)"
    }

    private static func describe(_ bounds: ClosedRange<Int64>) -> String {
        switch (bounds.lowerBound, bounds.upperBound) {
        case (Int64.min, let upper): return "at most \(upper)"
        case (let lower, Int64.max): return "at least \(lower)"
        case (let lower, let upper): return "between \(lower) and \(upper)"
        }
    }

    private static func describe(_ bounds: ClosedRange<Double>) -> String {
        let lower = bounds.lowerBound
        let upper = bounds.upperBound
        if lower == -Double.greatestFiniteMagnitude { return "at most \(Self.format(upper))" }
        if upper == Double.greatestFiniteMagnitude { return "at least \(Self.format(lower))" }
        return "between \(Self.format(lower)) and \(Self.format(upper))"
    }
}
