// TAN verification against verification-service's internal API (cwa-server §1.7).

import ENServiceKit
import Foundation
import Logging
import ServiceLifecycle

/// What verification-service said about a TAN.
enum TANVerdict: Equatable, Sendable {
    /// Valid and now used; `teleTANType` is the `X-CWA-TELETAN-TYPE` of a teleTAN-derived TAN (`TEST`, `EVENT`).
    case valid(teleTANType: String?)
    /// Unknown, expired or used (404), or not a TAN verification-service would issue (400).
    case rejected

    /// Whether the TAN came from an event teleTAN: only such TANs authorise a submission on behalf.
    var isEventTAN: Bool {
        if case .valid(let type?) = self { return type.caseInsensitiveCompare("EVENT") == .orderedSame }
        return false
    }
}

/// A TAN as the `cwa-authorization` header carries it.
enum TANHeader {
    /// The TAN in lower case, from a bare UUID or the documented `TAN <uuid>` form (cwa-server §8.1); nil when it
    /// is not a UUID.
    static func parse(_ value: String) -> String? {
        var text = value.trimmingCharacters(in: .whitespaces)
        if text.count > 4, text.prefix(4).caseInsensitiveCompare("TAN ") == .orderedSame {
            text = text.dropFirst(4).trimmingCharacters(in: .whitespaces)
        }
        guard text.utf8.count == 36, UUID(uuidString: text) != nil else { return nil }
        return text.lowercased()
    }
}

/// Verifies and uses up TANs through `POST {VERIFICATION_INTERNAL_URL}/version/v1/tan/verify`.
protocol TANVerifying: Sendable {
    func verify(_ tan: String) async throws(UpstreamUnavailable) -> TANVerdict
}

/// The live verifier: an `UpstreamClient` with bounded, jittered retries, run as a service of the application.
struct VerificationClient: TANVerifying, Service {
    private let upstream: UpstreamClient
    private let url: String

    /// - Parameter baseURL: `VERIFICATION_INTERNAL_URL`, e.g. `http://127.0.0.1:8012`.
    init(baseURL: String, policy: UpstreamPolicy, logger: Logger) {
        self.upstream = UpstreamClient(peer: "verification-service", policy: policy, logger: logger)
        self.url = baseURL.trimmingSuffix("/") + "/version/v1/tan/verify"
    }

    func run() async throws {
        try await self.upstream.run()
    }

    func shutdown() async throws {
        try await self.upstream.shutdown()
    }

    /// Verifying uses the TAN up, so only attempts that never reached verification-service are repeated: a
    /// repeat after a lost answer would find the TAN used and turn a valid submission into a 403.
    func verify(_ tan: String) async throws(UpstreamUnavailable) -> TANVerdict {
        let response = try await self.upstream.postJSON(self.url, #"{"tan":"\#(tan)"}"#, retries: .unsentOnly)
        switch response.status {
        case 200...299: return .valid(teleTANType: response.header("X-CWA-TELETAN-TYPE"))
        case 400, 404: return .rejected
        default: throw UpstreamUnavailable("verification-service answered \(response.status)")
        }
    }
}
