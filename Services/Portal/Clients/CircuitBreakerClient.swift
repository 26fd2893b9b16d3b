// What the portal asks verification-service about the NHS circuit breakers (nhs §7).

import ENNHS
import ENServiceKit
import Foundation
import NIOCore

/// The circuit-breaker routes of verification-service's internal port.
protocol CircuitBreakerClient: Sendable {
    func circuitBreakers() async throws(UpstreamUnavailable) -> [NHSCircuitBreakerState]
    /// Sets the officer's switch of `kind` (`yes`, `no`, `pending`).
    func setCircuitBreaker(kind: String, mode: String) async throws(UpstreamUnavailable)
    /// Answers every pending request of `kind` with `approval` (`yes`, `no`); returns how many.
    func resolveCircuitBreaker(kind: String, approval: String) async throws(UpstreamUnavailable) -> Int
}

extension HTTPTeleTANClient: CircuitBreakerClient {
    func circuitBreakers() async throws(UpstreamUnavailable) -> [NHSCircuitBreakerState] {
        struct Body: Decodable { var kinds: [NHSCircuitBreakerState] }
        return try await self.circuitBreakerCall("state", [:], as: Body.self).kinds
    }

    func setCircuitBreaker(kind: String, mode: String) async throws(UpstreamUnavailable) {
        struct Body: Decodable { var kinds: [NHSCircuitBreakerState] }
        _ = try await self.circuitBreakerCall("switch", ["kind": kind, "mode": mode], as: Body.self)
    }

    func resolveCircuitBreaker(kind: String, approval: String) async throws(UpstreamUnavailable) -> Int {
        struct Body: Decodable { var resolved: Int }
        return try await self.circuitBreakerCall(
            "resolve",
            ["kind": kind, "approval": approval],
            as: Body.self
        ).resolved
    }

    private func circuitBreakerCall<Body: Decodable>(
        _ action: String,
        _ fields: [String: String],
        as type: Body.Type
    )
        async throws(UpstreamUnavailable) -> Body
    {
        // A state read or a switch set twice changes nothing more and may be repeated; a resolve is not, since a
        // repeat would also answer requests that arrived meanwhile.
        let response = try await self.upstream.postJSON(
            self.baseURL.trimmingSuffix("/") + "/version/v1/nhs/circuit-breakers/\(action)",
            encoding: fields,
            retries: action == "resolve" ? .unsentOnly : .allFailures
        )
        guard response.status == 200,
            let body = try? JSONDecoder().decode(Body.self, from: Data(response.body.readableBytesView))
        else {
            throw UpstreamUnavailable("verification-service answered \(response.status) to circuit-breakers/\(action)")
        }
        return body
    }
}

/// The circuit breakers in memory, decided as verification-service would for route tests of the portal.
actor InMemoryCircuitBreakerClient: CircuitBreakerClient {
    private(set) var views: [String: NHSCircuitBreakerState] = [
        "exposure-notification": NHSCircuitBreakerState(
            kind: "exposure-notification",
            mode: "yes",
            pending: 0,
            pendingByRule: 0,
            lastHour: 0,
            sameHourMedian: 0,
            threshold: 100
        ),
        "venue": NHSCircuitBreakerState(
            kind: "venue",
            mode: "yes",
            pending: 0,
            pendingByRule: 0,
            lastHour: 0,
            sameHourMedian: 0,
            threshold: 100
        ),
    ]

    /// Holds `count` requests of `kind` as pending.
    func hold(_ count: Int, kind: String) {
        self.views[kind]?.pending += count
    }

    func circuitBreakers() -> [NHSCircuitBreakerState] {
        self.views.values.sorted { $0.kind < $1.kind }
    }

    func setCircuitBreaker(kind: String, mode: String) {
        self.views[kind]?.mode = mode
    }

    func resolveCircuitBreaker(kind: String, approval: String) -> Int {
        let resolved = self.views[kind]?.pending ?? 0
        self.views[kind]?.pending = 0
        self.views[kind]?.pendingByRule = 0
        return resolved
    }
}
