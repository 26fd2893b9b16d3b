// verification-service's teleTAN endpoint in memory, for route tests and runs without it.

import ENServiceKit

/// Records every call and answers as told: by default a new teleTAN each time.
actor InMemoryTeleTANClient: TeleTANClient {
    /// How the next calls are answered.
    enum Behaviour: Sendable {
        case answer(TeleTANAnswer)
        /// Fails like an unreachable verification-service.
        case unavailable
    }

    struct Call: Sendable {
        var kind: TeleTANKind
        var bearer: String
    }

    private var behaviour: Behaviour
    /// Every call so far, oldest first.
    private(set) var calls: [Call] = []

    init(behaviour: Behaviour = .answer(.created("R7KQ2MXP9T"))) {
        self.behaviour = behaviour
    }

    func behave(_ behaviour: Behaviour) {
        self.behaviour = behaviour
    }

    func createTeleTAN(kind: TeleTANKind, bearer: String) throws(UpstreamUnavailable) -> TeleTANAnswer {
        self.calls.append(Call(kind: kind, bearer: bearer))
        switch self.behaviour {
        case .answer(let answer): return answer
        case .unavailable: throw UpstreamUnavailable("verification-service is unavailable")
        }
    }
}
