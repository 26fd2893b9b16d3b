// A verification-service router with NHS enabled over the test database (or in memory), a clock the test moves, and the internal
// circuit-breaker routes without service-token middleware.

import ENCrypto
import ENNHS
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import VerificationService

struct NHSAppControlHarness {
    let clock = ManualClock(Date())
    let runtime: VerificationRuntime
    let app: Application<RouterResponder<ServiceRequestContext>>
    let internalApp: Application<RouterResponder<ServiceRequestContext>>

    /// The NHS tables on the test's database, or with `inMemory` in memory.
    init(_ overrides: [String: String] = [:], inMemory: Bool = false) throws {
        let configuration = try VerificationFixture.configuration(TestNHS.settings(overrides))
        var dependencies = VerificationDependencies.inMemory(clock: self.clock.wallClock)
        if !inMemory {
            let database = try PostgresTestDatabase.require()
            dependencies.nhsOrders = PostgresNHSOrderRepository(client: database.client, logger: database.logger)
            dependencies.isolationPayments = PostgresNHSIsolationPaymentRepository(
                client: database.client,
                logger: database.logger
            )
            dependencies.circuitBreakers = PostgresNHSCircuitBreakerRepository(
                client: database.client,
                logger: database.logger
            )
        }
        dependencies.apiKeys = NHSAPIKeyVerifier(store: TestNHS.keyStore())
        self.runtime = VerificationRuntime(
            configuration: configuration,
            dependencies: dependencies,
            environment: .testing()
        )
        self.app = Application(router: try Verification.buildPublicRouter(self.runtime))
        let internalRouter = Router(context: ServiceRequestContext.self)
        internalRouter.add(middleware: ErrorMiddleware())
        try #require(self.runtime.circuitBreakerController).addInternalRoutes(to: internalRouter.group("version/v1"))
        self.internalApp = Application(router: internalRouter)
    }

    /// A call of the app (API key `mobile`) whose answer must be signed for its request.
    func app(
        _ method: HTTPRequest.Method,
        _ path: String,
        _ json: String? = nil,
        requestID: String = "req-1",
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> RouterReply {
        let reply = try await self.send(method, path, json, key: TestNHS.mobile, requestID: requestID)
        #expect(
            throws: Never.self,
            "the answer (\(reply.status.code)) is signed for its request",
            sourceLocation: sourceLocation
        ) {
            try TestNHS.verifier.verifyAnswer(
                signature: reply.headers[.amzMetaSignature],
                date: reply.headers[.amzMetaSignatureDate],
                requestID: requestID,
                method: method.rawValue,
                path: path,
                body: reply.body.readableBytesView
            )
        }
        return reply
    }

    /// A call with `key` (none: no Authorization), unchecked.
    func send(
        _ method: HTTPRequest.Method,
        _ path: String,
        _ json: String?,
        key: NHSAPIKeyCredential?,
        requestID: String = "req-1"
    ) async throws -> RouterReply {
        var fields: HTTPFields = [.contentType: "application/json", .nhsRequestID: requestID]
        if let key { fields[.authorization] = key.authorization }
        let headers = fields
        return try await self.app.test(.router) { client in
            let response = try await client.execute(
                uri: path,
                method: method,
                headers: headers,
                body: json.map { ByteBuffer(string: $0) }
            )
            return RouterReply(status: response.status, headers: response.headers, body: response.body)
        }
    }
}
