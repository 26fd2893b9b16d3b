// The NHS app's daily analytics packet (nhs §10), validated and merged: what is stored.

import ENNHS
import Foundation

/// The app's description of itself in both submissions.
struct NHSAnalyticsMetadata: Sendable, Equatable {
    var area: NHSArea
    var deviceModel: String
    var operatingSystemVersion: String
    var latestApplicationVersion: String

    /// `metadata{postalDistrict, deviceModel, operatingSystemVersion, latestApplicationVersion, localAuthority?}`,
    /// the area merged at once; `nil` when a required member is missing or not a short string.
    init?(_ value: Any?, merge: NHSAreaMerge) {
        guard let fields = value as? [String: Any],
            let district = NHSAnalyticsPacket.text(fields["postalDistrict"]),
            let model = NHSAnalyticsPacket.text(fields["deviceModel"]),
            let os = NHSAnalyticsPacket.text(fields["operatingSystemVersion"]),
            let app = NHSAnalyticsPacket.text(fields["latestApplicationVersion"])
        else { return nil }
        let authority = fields["localAuthority"]
        guard authority == nil || authority is NSNull || NHSAnalyticsPacket.text(authority) != nil else { return nil }
        self.area = merge.merge(postalDistrict: district, localAuthority: NHSAnalyticsPacket.text(authority))
        self.deviceModel = model
        self.operatingSystemVersion = os
        self.latestApplicationVersion = app
    }
}

/// A daily packet, validated and merged: what is stored.
struct NHSAnalyticsPacket: Sendable, Equatable {
    var metadata: NHSAnalyticsMetadata
    var windowStart: Date
    var windowEnd: Date
    var includesMultipleApplicationVersions: Bool
    /// Every counter by name (`nil`: not reported).
    var counters: [String: Int64?]

    /// Why a packet is refused (400).
    struct Invalid: Error, Equatable { let reason: String }

    init(json: Data, merge: NHSAreaMerge) throws(Invalid) {
        guard let object = try? JSONSerialization.jsonObject(with: json), let fields = object as? [String: Any] else {
            throw Invalid(reason: "not a JSON object")
        }
        guard let metadata = NHSAnalyticsMetadata(fields["metadata"], merge: merge) else {
            throw Invalid(
                reason:
                    "metadata needs postalDistrict, deviceModel, operatingSystemVersion and latestApplicationVersion"
            )
        }
        guard let window = fields["analyticsWindow"] as? [String: Any],
            let start = Self.text(window["startDate"]).flatMap(NHSInstant.parse),
            let end = Self.text(window["endDate"]).flatMap(NHSInstant.parse), start <= end
        else { throw Invalid(reason: "analyticsWindow needs startDate <= endDate, ISO-8601 instants") }
        let multiple = fields["includesMultipleApplicationVersions"]
        guard multiple == nil || NHSJSONObject.isBoolean(multiple) else {
            throw Invalid(reason: "includesMultipleApplicationVersions must be a boolean")
        }
        guard let metrics = fields["metrics"] as? [String: Any] else { throw Invalid(reason: "metrics is required") }
        var counters: [String: Int64?] = [:]
        for name in NHSAnalyticsMetrics.all {
            let value = metrics[name]
            let required = NHSAnalyticsMetrics.required.contains(name)
            if value == nil {
                counters[name] = required ? 0 : .some(nil)
                continue
            }
            if value is NSNull {
                guard !required else { throw Invalid(reason: "metrics.\(name) must not be null") }
                counters[name] = .some(nil)
                continue
            }
            let limit = NHSAnalyticsMetrics.bytes.contains(name) ? Int64.max : Int64(Int32.max)
            guard let number = Self.count(value), number <= limit else {
                throw Invalid(reason: "metrics.\(name) must be a whole number from 0")
            }
            counters[name] = number
        }
        self.metadata = metadata
        self.windowStart = start
        self.windowEnd = end
        self.includesMultipleApplicationVersions = (multiple as? Bool) ?? false
        self.counters = counters
    }

    /// A non-blank string of at most 100 bytes, without NUL (which PostgreSQL's text refuses).
    static func text(_ value: Any?) -> String? {
        guard let text = value as? String, !text.trimmingCharacters(in: .whitespaces).isEmpty, text.utf8.count <= 100,
            !text.utf8.contains(0)
        else { return nil }
        return text
    }

    /// Whether a JSON value holds NUL in any key or string (jsonb refuses `\u0000`).
    static func holdsNUL(_ value: Any) -> Bool {
        switch value {
        case let text as String: return text.utf8.contains(0)
        case let array as [Any]: return array.contains(where: Self.holdsNUL)
        case let object as [String: Any]:
            return object.contains { $0.key.utf8.contains(0) || Self.holdsNUL($0.value) }
        default: return false
        }
    }

    /// A whole JSON number from 0, not a boolean.
    static func count(_ value: Any?) -> Int64? {
        guard let number = value as? NSNumber, !NHSJSONObject.isBoolean(value) else { return nil }
        let double = number.doubleValue
        guard double >= 0, double.rounded() == double, double < 9.2e18 else { return nil }
        return number.int64Value
    }

    /// The counters as one JSON object (`null` for those not reported), names sorted.
    var countersJSON: String {
        let pairs = self.counters.keys.sorted().map { name in
            "\"\(name)\":" + (self.counters[name].flatMap { $0 }.map(String.init) ?? "null")
        }
        return "{" + pairs.joined(separator: ",") + "}"
    }
}
