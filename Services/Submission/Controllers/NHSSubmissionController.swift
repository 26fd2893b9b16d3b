// The NHS key submission and its dummies (nhs §4): `/submission/diagnosis-keys`, `/submission/empty-submission`,
// `/submission/empty-submission-v2`.

import ENKeyStore
import ENModels
import ENNHS
import ENPersistence
import ENServiceKit
import Foundation
import Hummingbird
import Logging
import Metrics

/// Routes under `/submission`. A key submission is answered 200 with an empty body whatever it held (valid, invalid,
/// a wrong token: the reference's guard against response abuse), and signed; only an outage (503) differs. The V1
/// dummy (`empty-submission`) is answered exactly like it: the same status, the same signed headers, the same empty
/// body, after a delay drawn from recent real submissions. The reference leaves that dummy unsigned although its
/// contract says signed (nhs §13.8), which tells it apart from a real submission by its headers; here it is
/// signed. The V2 dummy is the reference's empty object: a `GET`, no key, `text/plain`, empty.
struct NHSSubmissionController: Sendable {
    let engine: SubmissionEngine
    let delay: FakeDelay
    let metrics: any MetricsFactory
    /// How a dummy waits (an event-loop timer; tests record the durations instead).
    var sleep: @Sendable (Duration) async throws -> Void = FakeDelay.eventLoopSleep

    /// `signed` carries the maintenance, API-key and signing middleware; `open` the maintenance middleware only.
    func addRoutes(signed: RouterGroup<some RequestContext>, open: RouterGroup<some RequestContext>) {
        signed.post("diagnosis-keys") { request, context in try await self.submit(request, context: context) }
        signed.post("empty-submission") { request, context in try await self.dummy(request, context: context) }
        open.get("empty-submission-v2") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain"])
        }
    }

    /// POST /submission/diagnosis-keys → 200, empty. Keys are stored only when the body is valid (§4: invalid keys
    /// dropped, more than 14 drop everything) and its submission token verifies; the token is spent only then.
    func submit(_ request: Request, context: some RequestContext) async throws -> Response {
        let started = ContinuousClock.now
        let body = try await request.body.collect(upTo: context.maxUploadSize)
        let now = self.engine.clock.now
        guard let payload = NHSKeyPayload.parse(Data(body.readableBytesView), now: now) else {
            self.count("dropped")
            return Response(status: .ok)
        }
        let stored = try await self.engine.submitNHS(payload, now: now)
        self.count(stored ? "stored" : "token_rejected")
        if stored { self.delay.record(ContinuousClock.now - started) }
        return Response(status: .ok)
    }

    /// POST /submission/empty-submission → 200, empty, after a delay like a real submission's; the body is read and
    /// ignored.
    func dummy(_ request: Request, context: some RequestContext) async throws -> Response {
        let started = ContinuousClock.now
        _ = try await request.body.collect(upTo: context.maxUploadSize)
        self.count("dummy")
        var generator = SystemRandomNumberGenerator()
        try? await self.delay.wait(for: self.delay.delay(using: &generator), since: started, sleep: self.sleep)
        return Response(status: .ok)
    }

    private func count(_ outcome: String) {
        Counter(label: "en_submission_nhs_requests_total", dimensions: [("outcome", outcome)], factory: self.metrics)
            .increment()
    }
}
