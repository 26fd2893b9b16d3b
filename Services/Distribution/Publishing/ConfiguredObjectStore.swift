// The object store the configuration names, with what it needs started and stopped.

import AsyncHTTPClient
import Logging
import ServiceLifecycle

/// The CDN's object store (a directory or an S3 bucket) and, for S3, the HTTP client it runs on; as a service it
/// shuts that client down when the application stops.
struct ConfiguredObjectStore: Service {
    let store: any ObjectStore
    private let httpClient: HTTPClient?
    private let s3: S3ObjectStore?

    static func make(_ choice: DistributionConfiguration.ObjectStoreChoice, logger: Logger) -> ConfiguredObjectStore {
        switch choice {
        case .directory(let root):
            return ConfiguredObjectStore(store: DirectoryStore(root: root), httpClient: nil, s3: nil)
        case .s3(let configuration):
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let s3 = S3ObjectStore(configuration: configuration, httpClient: http, logger: logger)
            return ConfiguredObjectStore(store: s3, httpClient: http, s3: s3)
        }
    }

    /// Fails when the store cannot take the tree (a missing bucket fails the run, as in the reference).
    func check() async throws {
        try await self.s3?.checkBucket()
    }

    func shutdown() async throws {
        try await self.httpClient?.shutdown()
    }

    /// Waits for the application's shutdown (or cancellation), then shuts the HTTP client down.
    func run() async throws {
        try? await gracefulShutdown()
        try await self.shutdown()
    }
}
