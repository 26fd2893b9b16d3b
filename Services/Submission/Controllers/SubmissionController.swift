// The app-facing API: key submission and submission on behalf, with dummy requests (cwa-server §1.1–§1.3, §1.11).

import ENServiceKit
import Foundation
import HTTPTypes
import Hummingbird

/// Routes under `/version/v1`.
///
/// A request with `cwa-fake` other than `0` is a dummy: its body is read like a real one, then nothing is
/// parsed, verified or stored, and it is answered with exactly the headers and empty body of a real success
/// after a delay drawn around the recent duration of real requests to the same endpoint. Real and dummy
/// requests are plain async handlers, so thousands of waiting dummies hold no thread.
struct SubmissionController: Sendable {
    static let fakeHeader = HTTPField.Name("cwa-fake")!
    static let authorizationHeader = HTTPField.Name("cwa-authorization")!
    static let otpHeader = HTTPField.Name("cwa-otp")!
    static let savedCheckInsHeader = HTTPField.Name("cwa-saved-checkins")!
    static let filteredCheckInsHeader = HTTPField.Name("cwa-filtered-checkins")!
    static let keysTruncatedHeader = HTTPField.Name("cwa-keys-truncated")!

    let engine: SubmissionEngine
    let delays: [SubmissionEndpoint: FakeDelay]
    let metrics: SubmissionMetrics
    /// How a fake request waits (an event-loop timer, `FakeDelay.eventLoopSleep`; tests record the durations instead).
    var sleep: @Sendable (Duration) async throws -> Void = FakeDelay.eventLoopSleep

    init(engine: SubmissionEngine, delays: [SubmissionEndpoint: FakeDelay], metrics: SubmissionMetrics) {
        self.engine = engine
        self.delays = delays
        self.metrics = metrics
    }

    func addRoutes(to group: RouterGroup<ServiceRequestContext>) {
        group.post("diagnosis-keys") { request, context in
            try await self.submit(.diagnosisKeys, request, context: context)
        }
        group.post("submission-on-behalf") { request, context in
            try await self.submit(.onBehalf, request, context: context)
        }
    }

    func submit(
        _ endpoint: SubmissionEndpoint,
        _ request: Request,
        context: ServiceRequestContext
    ) async throws -> Response {
        // Real durations and dummy waits count from when the request's head arrived, so the time middleware takes is
        // part of what a dummy replays.
        let started = context.receivedAt
        guard let fakeHeader = request.headers[Self.fakeHeader] else { throw SubmissionFailure.missingFakeHeader }
        // The reference reads the header as an integer: 0 is real, any other number a dummy.
        guard let fake = Int(fakeHeader.trimmingCharacters(in: .whitespaces)) else {
            throw SubmissionFailure.fakeHeaderNotInteger
        }
        guard request.mediaType == "application/x-protobuf" else { throw SubmissionFailure.unsupportedContentType }
        let body = try await request.body.collect(upTo: context.maxUploadSize)

        guard fake == 0 else {
            self.metrics.recordRequest(endpoint, fake: true)
            if let delays = self.delays[endpoint] {
                var generator = SystemRandomNumberGenerator()
                // A cancelled wait (the client left) still ends like a real request would, not as an error.
                try? await delays.wait(for: delays.delay(using: &generator), since: started, sleep: self.sleep)
            }
            return Self.success(SubmissionReceipt(savedCheckIns: 0, filteredCheckIns: 0))
        }

        let credential = try Self.credential(request.headers, endpoint: endpoint)
        self.metrics.recordRequest(endpoint, fake: false)
        // Only stored submissions feed the estimate. The reference also folds refused TANs into it (§1.4), but a flood
        // of random TANs would then fill it with fast refusals, and dummies would answer faster than real uploads.
        let receipt = try await self.engine.submit(endpoint, body: body.readableBytesView, credential: credential)
        self.record(endpoint, since: started)
        return Self.success(receipt)
    }

    /// §1.2: exactly one of `cwa-authorization` (a TAN) and `cwa-otp` (a self-report's one-time password); a
    /// submission on behalf takes a TAN only. As in the reference, a header with an empty value counts as absent.
    private static func credential(
        _ headers: HTTPFields,
        endpoint: SubmissionEndpoint
    ) throws(SubmissionFailure) -> SubmissionCredential {
        let present = { (name: HTTPField.Name) in
            headers[name].flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
        }
        switch (present(Self.authorizationHeader), present(Self.otpHeader)) {
        case (.some, .some): throw .ambiguousAuthorization
        case (nil, nil): throw .missingAuthorization
        case (.some(let tan), nil): return .tan(tan)
        case (nil, .some(let otp)):
            guard endpoint == .diagnosisKeys else { throw .onBehalfNeedsTAN }
            return .otp(otp)
        }
    }

    private func record(_ endpoint: SubmissionEndpoint, since started: ContinuousClock.Instant) {
        let duration = ContinuousClock.now - started
        guard let delay = self.delays[endpoint] else { return }
        delay.record(duration)
        self.metrics.recordDuration(endpoint, duration, fakeDelay: delay.average)
    }

    /// 200 with an empty body and the check-in counts: the same bytes for real and fake requests, except that a
    /// self-report whose older keys were dropped also gets `cwa-keys-truncated: <days>` (§1.3).
    ///
    /// Dummies never carry `cwa-keys-truncated`, so such an answer is some 24 bytes longer than a dummy's. We accept
    /// that rather than send the header on every answer: the apps read its presence as "your keys were cut", so it
    /// cannot be padded onto dummies or untruncated answers without misleading every user. It is rare by
    /// construction: with the defaults (`MAX_NUMBER_OF_DAYS_FOR_SRS` = `RETENTION_DAYS` = 14) the retention window
    /// has dropped every older key before the self-report filter runs, so the header appears only where an operator
    /// sets fewer self-report days than retention days and a phone sends keys older than that.
    static func success(_ receipt: SubmissionReceipt) -> Response {
        var headers: HTTPFields = [
            Self.savedCheckInsHeader: Self.fixedWidth(receipt.savedCheckIns),
            Self.filteredCheckInsHeader: Self.fixedWidth(receipt.filteredCheckIns),
        ]
        if let days = receipt.keysTruncatedToDays { headers[Self.keysTruncatedHeader] = "\(days)" }
        return Response(status: .ok, headers: headers)
    }

    /// A count as three digits (`007`): every answer's headers have the same length, whatever a real upload saved,
    /// so a dummy's `000` cannot be told from a real count by size. Counts never exceed
    /// `CheckInPolicy.maxPerSubmission` (at most 999), and `007` reads as 7 as an integer.
    static func fixedWidth(_ count: Int) -> String {
        let digits = String(min(max(count, 0), 999))
        return String(repeating: "0", count: 3 - digits.count) + digits
    }
}
