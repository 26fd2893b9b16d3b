// NHS mobile analytics (nhs §10): the app's daily packet of 69 counters and its events, merged to coarse areas
// (postcode district × local authority, `Resources/pd-la-merge.csv`) before anything is stored.

import ENNHS
import ENPersistence
import ENServiceKit
import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore
import PostgresNIO

/// The counters of the daily packet (the reference's `AnalyticsMetrics`, 6 + 14 + 49 names).
enum NHSAnalyticsMetrics {
    /// Nullable 64-bit byte counts.
    static let byteCounts = [
        "cumulativeDownloadBytes", "cumulativeUploadBytes", "cumulativeCellularDownloadBytes",
        "cumulativeCellularUploadBytes", "cumulativeWifiDownloadBytes", "cumulativeWifiUploadBytes",
    ]
    /// 32-bit counts that are 0 when missing and refused when `null`.
    static let requiredCounts = [
        "checkedIn", "canceledCheckIn", "receivedVoidTestResult", "isIsolatingBackgroundTick",
        "hasHadRiskyContactBackgroundTick", "receivedPositiveTestResult", "receivedNegativeTestResult",
        "hasSelfDiagnosedPositiveBackgroundTick", "completedQuestionnaireAndStartedIsolation",
        "encounterDetectionPausedBackgroundTick", "completedQuestionnaireButDidNotStartIsolation",
        "totalBackgroundTasks", "runningNormallyBackgroundTick", "completedOnboarding",
    ]
    /// Nullable 32-bit counts.
    static let optionalCounts = [
        "receivedVoidTestResultEnteredManually", "receivedPositiveTestResultEnteredManually",
        "receivedNegativeTestResultEnteredManually", "receivedVoidTestResultViaPolling",
        "receivedPositiveTestResultViaPolling", "receivedNegativeTestResultViaPolling",
        "hasSelfDiagnosedBackgroundTick", "hasTestedPositiveBackgroundTick",
        "isIsolatingForSelfDiagnosedBackgroundTick", "isIsolatingForTestedPositiveBackgroundTick",
        "isIsolatingForHadRiskyContactBackgroundTick", "receivedRiskyContactNotification", "startedIsolation",
        "receivedPositiveTestResultWhenIsolatingDueToRiskyContact", "receivedActiveIpcToken",
        "haveActiveIpcTokenBackgroundTick", "selectedIsolationPaymentsButton",
        "launchedIsolationPaymentsApplication", "receivedPositiveLFDTestResultViaPolling",
        "receivedNegativeLFDTestResultViaPolling", "receivedVoidLFDTestResultViaPolling",
        "receivedPositiveLFDTestResultEnteredManually", "receivedNegativeLFDTestResultEnteredManually",
        "receivedVoidLFDTestResultEnteredManually", "hasTestedLFDPositiveBackgroundTick",
        "isIsolatingForTestedLFDPositiveBackgroundTick", "totalExposureWindowsNotConsideredRisky",
        "totalExposureWindowsConsideredRisky", "acknowledgedStartOfIsolationDueToRiskyContact",
        "hasRiskyContactNotificationsEnabledBackgroundTick", "totalRiskyContactReminderNotifications",
        "receivedUnconfirmedPositiveTestResult", "isIsolatingForUnconfirmedTestBackgroundTick",
        "launchedTestOrdering", "didHaveSymptomsBeforeReceivedTestResult",
        "didRememberOnsetSymptomsDateBeforeReceivedTestResult", "didAskForSymptomsOnPositiveTestEntry",
        "declaredNegativeResultFromDCT", "receivedPositiveSelfRapidTestResultViaPolling",
        "receivedNegativeSelfRapidTestResultViaPolling", "receivedVoidSelfRapidTestResultViaPolling",
        "receivedPositiveSelfRapidTestResultEnteredManually", "receivedNegativeSelfRapidTestResultEnteredManually",
        "receivedVoidSelfRapidTestResultEnteredManually", "isIsolatingForTestedSelfRapidPositiveBackgroundTick",
        "hasTestedSelfRapidPositiveBackgroundTick", "receivedRiskyVenueM1Warning", "receivedRiskyVenueM2Warning",
        "hasReceivedRiskyVenueM2WarningBackgroundTick",
    ]

    static let all = Self.byteCounts + Self.requiredCounts + Self.optionalCounts
    /// Lookups of every packet, made once.
    static let required = Set(Self.requiredCounts)
    static let bytes = Set(Self.byteCounts)
}

/// A postcode district and a local authority as they are stored: merged so that no area is small enough to point at
/// anyone, or `UNKNOWN`.
struct NHSArea: Sendable, Equatable {
    var postalDistrict: String
    var localAuthority: String

    static let unknown = NHSArea(postalDistrict: "UNKNOWN", localAuthority: "UNKNOWN")
}

/// The privacy merge table: `<district>_<LAD20CD>` → the merged district and its local authority.
struct NHSAreaMerge: Sendable {
    let table: [String: NHSArea]

    init(table: [String: NHSArea]) {
        self.table = table
    }

    /// The table shipped with the service.
    static func bundled() throws -> NHSAreaMerge {
        guard let url = Bundle.module.url(forResource: "pd-la-merge", withExtension: "csv", subdirectory: "Resources")
        else { throw CocoaError(.fileNoSuchFile) }
        return try NHSAreaMerge(csv: String(contentsOf: url, encoding: .utf8))
    }

    /// `"Postcode_District_LAD_ID","LAD20CD","Merged_Postcode_District"` and one quoted row per pair. The first field
    /// is `<district>_<authority>`, or `<district>_` for a district whatever its authority (its merged authority is
    /// then unknown), as the reference's parser reads it; the table's row for an empty pair (`_`) matches nothing.
    init(csv: String) throws {
        var table: [String: NHSArea] = [:]
        for (number, line) in csv.split(whereSeparator: \.isNewline).enumerated() where number > 0 {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
            }
            guard fields.count == 3, fields[0].contains("_") else { throw NHSAreaMergeError(line: number + 1) }
            let pair = fields[0].split(separator: "_", maxSplits: 1).filter { !$0.isEmpty }
            switch pair.count {
            case 2: table["\(pair[0])_\(pair[1])"] = NHSArea(postalDistrict: fields[2], localAuthority: fields[1])
            case 1: table["\(pair[0])_UNKNOWN"] = NHSArea(postalDistrict: fields[2], localAuthority: "UNKNOWN")
            default: continue
            }
        }
        self.table = table
    }

    /// `<district>_<authority>`, then `<district>_UNKNOWN`, else `UNKNOWN`/`UNKNOWN` (the reference's
    /// `PostDistrictLaReplacer`).
    func merge(postalDistrict: String, localAuthority: String?) -> NHSArea {
        self.table["\(postalDistrict)_\(localAuthority ?? "UNKNOWN")"] ?? self.table["\(postalDistrict)_UNKNOWN"]
            ?? .unknown
    }
}

struct NHSAreaMergeError: Error, CustomStringConvertible {
    let line: Int
    var description: String { "pd-la-merge.csv line \(self.line) is not three quoted fields" }
}

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

/// `nhs_mobile_analytics` and `nhs_mobile_analytics_event` (migration 0002): the submission day, never its time.
struct NHSAnalyticsStore: Sendable {
    let database: DatabasePool
    let logger: Logger

    init(client: PostgresClient, logger: Logger, leaseTimeout: Duration = DatabasePool.unhurriedLeaseTimeout) {
        self.database = DatabasePool(client: client, leaseTimeout: leaseTimeout)
        self.logger = logger.cappedForDatabase
    }

    func store(_ packet: NHSAnalyticsPacket, day: String) async throws {
        let metadata = packet.metadata
        try await self.database.query(
            """
            INSERT INTO nhs_mobile_analytics (submitted_at, window_start, window_end, postal_district, local_authority,
                device_model, operating_system_version, latest_application_version,
                includes_multiple_application_versions, metrics)
            VALUES (\(day)::date, \(packet.windowStart), \(packet.windowEnd), \(metadata.area.postalDistrict),
                \(metadata.area.localAuthority), \(metadata.deviceModel), \(metadata.operatingSystemVersion),
                \(metadata.latestApplicationVersion), \(packet.includesMultipleApplicationVersions),
                \(packet.countersJSON)::jsonb)
            """,
            logger: self.logger
        )
    }

    /// Every event of the submission in one statement, each with a new random id.
    func store(_ submission: NHSAnalyticsEvents, day: String) async throws {
        let metadata = submission.metadata
        try await self.database.query(
            """
            INSERT INTO nhs_mobile_analytics_event (submitted_at, event_id, postal_district, local_authority,
                device_model, operating_system_version, latest_application_version, event_type, event_version, payload)
            SELECT \(day)::date, gen_random_uuid(), \(metadata.area.postalDistrict), \(metadata.area.localAuthority),
                \(metadata.deviceModel), \(metadata.operatingSystemVersion), \(metadata.latestApplicationVersion),
                e.type, e.version, e.payload::jsonb
            FROM unnest(\(submission.events.map(\.type))::text[], \(submission.events.map(\.version))::int[],
                \(submission.events.map(\.payload))::text[]) AS e(type, version, payload)
            """,
            logger: self.logger
        )
    }
}

/// `/submission/mobile-analytics` (API key `mobile`, not signed) and `/submission/mobile-analytics-events` (signed).
struct NHSAnalyticsController: Sendable {
    let store: NHSAnalyticsStore
    let merge: NHSAreaMerge
    /// `NHS_ANALYTICS_EVENTS_ENABLED`: off, events are answered 503 (the reference's `ACCEPT_REQUESTS_ENABLED`).
    let eventsEnabled: Bool
    let clock: WallClock
    let metrics: any MetricsFactory

    func addPacketRoute(to group: RouterGroup<some RequestContext>) {
        group.post("mobile-analytics") { request, context in try await self.packet(request, context: context) }
    }

    func addEventsRoute(to group: RouterGroup<some RequestContext>) {
        group.post("mobile-analytics-events") { request, context in try await self.events(request, context: context) }
    }

    /// POST /submission/mobile-analytics → 200 with no body once stored; 400 for a packet that is not one.
    func packet(_ request: Request, context: some RequestContext) async throws -> Response {
        let body = try await request.body.collect(upTo: context.maxUploadSize)
        let packet: NHSAnalyticsPacket
        do {
            packet = try NHSAnalyticsPacket(json: Data(body.readableBytesView), merge: self.merge)
        } catch {
            self.count("packet", "invalid")
            throw NHSError(.badRequest, "invalid analytics packet: \(error.reason)")
        }
        try await self.store.store(packet, day: DonationDate(self.clock.now).text)
        self.count("packet", packet.metadata.area == .unknown ? "stored_unknown_area" : "stored")
        return Response(status: .ok)
    }

    /// POST /submission/mobile-analytics-events → 200 with no body once stored; 400 for a bad submission, 503 while
    /// events are not accepted.
    func events(_ request: Request, context: some RequestContext) async throws -> Response {
        guard self.eventsEnabled else { throw NHSError(.serviceUnavailable, "analytics events are not accepted now") }
        let body = try await request.body.collect(upTo: context.maxUploadSize)
        let submission: NHSAnalyticsEvents
        do {
            submission = try NHSAnalyticsEvents(json: Data(body.readableBytesView), merge: self.merge)
        } catch {
            self.count("events", "invalid")
            throw NHSError(.badRequest, "invalid analytics events: \(error.reason)")
        }
        try await self.store.store(submission, day: DonationDate(self.clock.now).text)
        self.count("events", "stored")
        return Response(status: .ok)
    }

    private func count(_ route: String, _ outcome: String) {
        Counter(
            label: "en_datadonation_nhs_analytics_total",
            dimensions: [("route", route), ("outcome", outcome)],
            factory: self.metrics
        ).increment()
    }
}
