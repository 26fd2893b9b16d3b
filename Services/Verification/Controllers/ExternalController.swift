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
    /// How a fake request waits (`Task.sleep`; tests record the durations instead).
    var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }

    func addRoutes(to group: RouterGroup<ServiceRequestContext>) {
        group.post("registrationToken") { request, context in try await self.registrationToken(request, context: context) }
        group.post("testresult") { request, context in try await self.testResult(request, context: context) }
        group.post("tan") { request, context in try await self.tan(request, context: context) }
    }

    /// POST /version/v1/registrationToken → 201 `{"registrationToken": …}`.
    func registrationToken(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        let started = ContinuousClock.now
        let mode = FakeMode(request.headers)
        let key = try await request.decodeJSON(as: RegistrationTokenRequest.self, context: context).validated()
        let padding = mode.pads(.registrationToken) ? ResponsePadding.random(count: PaddedJSON.registrationTokenPadding) : nil
        guard mode != .fake else {
            let body = RegistrationTokenResponse(registrationToken: RandomUUID.generate(), responsePadding: padding)
            return try await self.fake(.registrationToken, started: started) { try PaddedJSON.response(.created, encoding: body) }
        }
        let token = try await self.engine.register(key)
        self.delays.record(.registrationToken, duration: ContinuousClock.now - started)
        return try PaddedJSON.response(.created, encoding: RegistrationTokenResponse(registrationToken: token, responsePadding: padding))
    }

    /// POST /version/v1/testresult → 200 `{"testResult", "sc", "labId"?, "responsePadding"}`.
    func testResult(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        let started = ContinuousClock.now
        let mode = FakeMode(request.headers)
        let token = try await request.decodeJSON(as: RegistrationTokenBody.self, context: context).validated()
        guard mode != .fake else {
            let body = TestResultResponse(testResult: 2, sc: Int64(self.engine.clock.now.timeIntervalSince1970.rounded(.down)), labId: nil)
            return try await self.fake(.testResult, started: started) { PaddedJSON.response(.ok, try PaddedJSON.padded(body)) }
        }
        let result = try await self.engine.result(token: token)
        self.delays.record(.testResult, duration: ContinuousClock.now - started)
        let body = TestResultResponse(testResult: result.testResult, sc: result.sc, labId: result.labId)
        return PaddedJSON.response(.ok, try PaddedJSON.padded(body))
    }

    /// POST /version/v1/tan → 201 `{"tan": …}`.
    func tan(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        let started = ContinuousClock.now
        let mode = FakeMode(request.headers)
        let token = try await request.decodeJSON(as: RegistrationTokenBody.self, context: context).validated()
        let padding = mode.pads(.tan) ? ResponsePadding.random(count: PaddedJSON.tanPadding) : nil
        guard mode != .fake else {
            let body = TANResponse(tan: RandomUUID.generate(), responsePadding: padding)
            return try await self.fake(.tan, started: started) { try PaddedJSON.response(.created, encoding: body) }
        }
        let tan = try await self.engine.issueTAN(token: token)
        self.delays.record(.tan, duration: ContinuousClock.now - started)
        return try PaddedJSON.response(.created, encoding: TANResponse(tan: tan, responsePadding: padding))
    }

    /// Waits until a delay drawn for `endpoint` has passed since `started`, then answers with `body`.
    private func fake(_ endpoint: AppEndpoint, started: ContinuousClock.Instant, body: () throws -> Response) async throws -> Response {
        self.metrics.recordFake(endpoint)
        var generator = SystemRandomNumberGenerator()
        let remaining = self.delays.delay(endpoint, using: &generator) - (ContinuousClock.now - started)
        if remaining > .zero { try await self.sleep(remaining) }
        return try body()
    }
}
