// The app-facing API: registration tokens, result polling and TANs, with dummy requests (cwa-satellites §1.2, §1.5).

import ENServiceKit
import Foundation
import Hummingbird

/// Routes of the main port, under `/version/v1`.
///
/// Every request is decoded and validated the same way whether it is real or fake, so a malformed dummy fails
/// like a malformed real request. A fake request then touches no state, and answers after a delay drawn around
/// the recent real duration of the same endpoint, with a body as long as a real one.
struct ExternalController: Sendable {
    let engine: VerificationEngine
    let delays: FakeDelayEstimator
    let metrics: VerificationMetrics
    /// How a fake request waits (an event-loop timer, `FakeDelay.eventLoopSleep`; tests record the durations instead).
    var sleep: @Sendable (Duration) async throws -> Void = FakeDelay.eventLoopSleep

    func addRoutes(to group: RouterGroup<ServiceRequestContext>) {
        group.post("registrationToken") { request, context in
            try await self.registrationToken(request, context: context)
        }
        group.post("testresult") { request, context in try await self.testResult(request, context: context) }
        group.post("tan") { request, context in try await self.tan(request, context: context) }
    }

    /// POST /version/v1/registrationToken → 201 `{"registrationToken": …}`.
    func registrationToken(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        try await self.serve(
            .registrationToken,
            request,
            input: { try await $0.decodeJSON(as: RegistrationTokenRequest.self, context: context).validated() },
            real: { try await self.engine.register($0) },
            fake: { RandomUUID.generate() },
            render: { token, mode in
                let padding = Self.padding(PaddedJSON.registrationTokenPadding, .registrationToken, mode)
                return try PaddedJSON.response(
                    .created,
                    encoding: RegistrationTokenResponse(registrationToken: token, responsePadding: padding)
                )
            }
        )
    }

    /// POST /version/v1/testresult → 200 `{"testResult", "sc", "labId"?, "responsePadding"}`.
    func testResult(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        try await self.serve(
            .testResult,
            request,
            input: { try await $0.decodeJSON(as: RegistrationTokenBody.self, context: context).validated() },
            real: { try await self.engine.result(token: $0) },
            fake: {
                AppTestResult(
                    testResult: VerificationEngine.positive,
                    sc: Int64(self.engine.clock.now.timeIntervalSince1970.rounded(.down))
                )
            },
            render: { result, _ in
                PaddedJSON.response(
                    .ok,
                    try PaddedJSON.padded(
                        TestResultResponse(testResult: result.testResult, sc: result.sc, labId: result.labId)
                    )
                )
            }
        )
    }

    /// POST /version/v1/tan → 201 `{"tan": …}`.
    func tan(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        try await self.serve(
            .tan,
            request,
            input: { try await $0.decodeJSON(as: RegistrationTokenBody.self, context: context).validated() },
            real: { try await self.engine.issueTAN(token: $0) },
            fake: { RandomUUID.generate() },
            render: { tan, mode in
                try PaddedJSON.response(
                    .created,
                    encoding: TANResponse(tan: tan, responsePadding: Self.padding(PaddedJSON.tanPadding, .tan, mode))
                )
            }
        )
    }

    /// What every app endpoint does: decode and validate `input` (real or fake alike); for a fake request, wait
    /// until a delay drawn for `endpoint` has passed and render a `fake` value; for a real one, render the `real`
    /// value and fold the request's duration into the endpoint's estimate.
    private func serve<Input, Value>(
        _ endpoint: AppEndpoint,
        _ request: Request,
        input: (Request) async throws -> Input,
        real: (Input) async throws -> Value,
        fake: () -> Value,
        render: (Value, FakeMode) throws -> Response
    ) async throws -> Response {
        let started = ContinuousClock.now
        let mode = FakeMode(request.headers)
        let validated = try await input(request)
        guard mode != .fake else {
            self.metrics.recordFake(endpoint)
            var generator = SystemRandomNumberGenerator()
            try await self.delays.wait(
                endpoint,
                for: self.delays.delay(endpoint, using: &generator),
                since: started,
                sleep: self.sleep
            )
            return try render(fake(), mode)
        }
        let value = try await real(validated)
        self.delays.record(endpoint, duration: ContinuousClock.now - started)
        return try render(value, mode)
    }

    /// `count` random characters when the answer carries padding (§1.5), else none.
    private static func padding(_ count: Int, _ endpoint: AppEndpoint, _ mode: FakeMode) -> String? {
        mode.pads(endpoint) ? ResponsePadding.random(count: count) : nil
    }
}
