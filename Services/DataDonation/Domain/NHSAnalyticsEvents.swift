// An NHS app's analytics events submission (nhs §10), validated and merged.

import ENNHS
import Foundation

/// One event of an events submission, validated: its type, version and payload as stored.
struct NHSAnalyticsEvent: Sendable, Equatable {
    var type: String
    var version: Int
    /// The payload, re-serialised with sorted keys.
    var payload: String

    static let mostPerSubmission = 10
}

/// An events submission, validated and merged.
struct NHSAnalyticsEvents: Sendable, Equatable {
    var metadata: NHSAnalyticsMetadata
    var events: [NHSAnalyticsEvent]

    init(json: Data, merge: NHSAreaMerge) throws(NHSAnalyticsPacket.Invalid) {
        typealias Invalid = NHSAnalyticsPacket.Invalid
        guard let object = try? JSONSerialization.jsonObject(with: json), let fields = object as? [String: Any] else {
            throw Invalid(reason: "not a JSON object")
        }
        guard let metadata = NHSAnalyticsMetadata(fields["metadata"], merge: merge) else {
            throw Invalid(
                reason:
                    "metadata needs postalDistrict, deviceModel, operatingSystemVersion and latestApplicationVersion"
            )
        }
        guard let list = fields["events"] as? [Any], (1...NHSAnalyticsEvent.mostPerSubmission).contains(list.count)
        else {
            throw Invalid(reason: "events must hold 1 to \(NHSAnalyticsEvent.mostPerSubmission) events")
        }
        var events: [NHSAnalyticsEvent] = []
        for item in list {
            guard let event = item as? [String: Any], let type = NHSAnalyticsPacket.text(event["type"]),
                let version = NHSAnalyticsPacket.count(event["version"]), (1...1000).contains(version),
                let payload = event["payload"], payload is [String: Any], !NHSAnalyticsPacket.holdsNUL(payload),
                let data = try? JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
            else { throw Invalid(reason: "every event needs type, version and an object payload") }
            events.append(
                NHSAnalyticsEvent(type: type, version: Int(version), payload: String(decoding: data, as: UTF8.self))
            )
        }
        self.metadata = metadata
        self.events = events
    }
}
