// test-result-service's internal API over HTTP.

import ENCrypto
import ENNHS
import ENServiceKit
import Foundation
import Logging
import NIOCore
import ServiceLifecycle

/// Asks test-result-service for the result of a hashed GUID or DOB hash, through an `UpstreamClient` (timeouts,
/// bounded retries with jitter) that runs as a service of the application.
struct HTTPTestResultClient: TestResultClient, Service {
    private let upstream: UpstreamClient
    private let url: String

    /// - Parameter baseURL: `TEST_RESULT_INTERNAL_URL`, e.g. `http://127.0.0.1:8013`.
    init(baseURL: String, policy: UpstreamPolicy, serviceToken: ServiceTokenSigner, logger: Logger) {
        self.upstream = UpstreamClient(
            peer: "test-result-service",
            policy: policy,
            serviceToken: serviceToken,
            logger: logger
        )
        self.url = baseURL.trimmingSuffix("/") + "/api/v1/app/result"
        self.nhsURL = baseURL.trimmingSuffix("/") + "/api/v1/nhs/"
    }

    private let nhsURL: String

    func nhsCreateOrder(ctaHashes: [String]) async throws(UpstreamUnavailable) -> Bool {
        let response = try await self.upstream.postJSON(self.nhsURL + "order", encoding: ["ctaHashes": ctaHashes])
        switch response.status {
        case 201: return true
        case 409: return false
        default: throw UpstreamUnavailable("test-result-service answered \(response.status)")
        }
    }

    func nhsResult(ctaHashes: [String]) async throws(UpstreamUnavailable) -> NHSResultReport? {
        let response = try await self.upstream.postJSON(self.nhsURL + "result", encoding: ["ctaHashes": ctaHashes])
        switch response.status {
        case 404: return nil
        case 200:
            guard
                let result = try? JSONDecoder().decode(
                    NHSResultReport.self,
                    from: Data(response.body.readableBytesView)
                ), ["pending", "available"].contains(result.status)
            else { throw UpstreamUnavailable("test-result-service sent an unreadable NHS result") }
            return result
        default: throw UpstreamUnavailable("test-result-service answered \(response.status)")
        }
    }

    func run() async throws {
        try await self.upstream.run()
    }

    func shutdown() async throws {
        try await self.upstream.shutdown()
    }

    /// The result for `id` (already validated: 64 hex characters, or a DOB hash).
    func result(for id: String) async throws(UpstreamUnavailable) -> ReportedTestResult {
        let response = try await self.upstream.postJSON(self.url, encoding: ["id": id])
        guard response.status == 200 else {
            throw UpstreamUnavailable("test-result-service answered \(response.status)")
        }
        guard
            let result = try? JSONDecoder().decode(
                ReportedTestResult.self,
                from: Data(response.body.readableBytesView)
            ),
            (0...9).contains(result.testResult), (result.labId?.unicodeScalars.count ?? 0) <= 64
        else {
            throw UpstreamUnavailable("test-result-service sent an unreadable result")
        }
        return result
    }
}
