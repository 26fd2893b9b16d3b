// Building test-result-service for tests: configuration, applications, ids and bodies.

import ENCrypto
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

@testable import TestResultService

/// Shared arrangements of the service's tests.
enum TestResultFixture {
    /// A valid configuration with ports 0 and a placeholder database, plus `overrides` (environment-style names).
    static func configuration(_ overrides: [String: String] = [:]) throws -> TestResultConfiguration {
        var values = TestSettings.testResult()
        values.merge(overrides) { _, new in new }
        return try TestResultConfiguration.load(from: SettingsReader(values: values))
    }

    /// The lab-facing router as an application, for `.router` tests.
    static func labApp(
        configuration: TestResultConfiguration? = nil,
        dependencies: TestResultDependencies,
        environment: ServiceEnvironment = .testing()
    ) throws -> some ApplicationProtocol {
        let configuration = try configuration ?? self.configuration()
        let router = try TestResult.buildPublicRouter(
            configuration: configuration,
            dependencies: dependencies,
            environment: environment,
            metrics: TestResultMetrics(factory: environment.metricsFactory)
        )
        return Application(router: router)
    }

    /// The internal router as an application, for `.router` tests.
    static func internalApp(
        configuration: TestResultConfiguration? = nil,
        dependencies: TestResultDependencies,
        environment: ServiceEnvironment = .testing()
    ) throws -> some ApplicationProtocol {
        let router = TestResult.buildInternalRouter(
            configuration: try configuration ?? self.configuration(),
            dependencies: dependencies,
            environment: environment,
            metrics: TestResultMetrics(factory: environment.metricsFactory)
        )
        return Application(router: router)
    }

    /// `{"labId": …, "testResults": [{"id": …, "result": …, "sc": …}, …]}`.
    static func batch(labID: String? = "lab-1", _ entries: [(id: String, result: Int, sc: Int64?)]) -> ByteBuffer {
        var object: [String: Any] = [
            "testResults": entries.map { entry -> [String: Any] in
                var item: [String: Any] = ["id": entry.id, "result": entry.result]
                if let sc = entry.sc { item["sc"] = sc }
                return item
            }
        ]
        if let labID { object["labId"] = labID }
        return ByteBuffer(bytes: try! JSONSerialization.data(withJSONObject: object))
    }

    /// `{"id": …}`.
    static func lookup(_ id: String) -> ByteBuffer {
        ByteBuffer(string: #"{"id":"\#(id)"}"#)
    }
}
