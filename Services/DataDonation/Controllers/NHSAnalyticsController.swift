// The NHS mobile analytics routes (nhs §10): a body in, validated and merged, stored, counted.

import ENNHS
import ENServiceKit
import Foundation
import Hummingbird
import Metrics

/// `/submission/mobile-analytics` (API key `mobile`, not signed) and `/submission/mobile-analytics-events` (signed).
struct NHSAnalyticsController: Sendable {
    let analytics: any NHSAnalyticsRepository
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
        try await self.analytics.store(packet, day: DonationDate(self.clock.now).text)
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
        try await self.analytics.store(submission, day: DonationDate(self.clock.now).text)
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
