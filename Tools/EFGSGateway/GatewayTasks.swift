// The gateway's background work: forming download batches, retention, and delivering callbacks.

import AsyncHTTPClient
import ENFederation
import ENModels
import ENServiceKit
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// Forms download batches from new uploads, then applies retention; one replica at a time.
struct BatchingPass: Sendable {
    let store: GatewayStore
    let settings: GatewaySettings
    let clock: WallClock
    let metrics: GatewayMetrics
    let logger: Logger

    func run() async throws {
        let now = self.clock.now
        if let created = try await self.store.formDownloadBatches(
            maximumKeys: self.settings.downloadBatchKeys,
            now: now
        ),
            !created.isEmpty
        {
            self.metrics.recordBatches(created.count)
            self.logger.info("Download batches formed", metadata: ["batches": "\(created.count)"])
        }
        let cutoff = Calendar.utc.startOfDay(for: now).addingTimeInterval(-Double(self.settings.retentionDays) * 86_400)
        let deleted = try await self.store.deleteKeys(createdBefore: cutoff)
        if deleted > 0 { self.logger.info("Retention deleted keys", metadata: ["keys": "\(deleted)"]) }
    }
}

/// Calls national callbacks for new download batches, in order per subscription: a 2xx completes a task, anything
/// else retries it after the wait; after the last attempt the subscription is deleted (cwa-satellites §5.5).
final class CallbackDelivery: Service, Sendable {
    private let store: GatewayStore
    private let http: HTTPClient
    private let timeout: Duration
    private let retryWait: Duration
    private let maximumAttempts: Int
    private let allowPrivate: Bool
    private let clock: WallClock
    private let metrics: GatewayMetrics
    private let logger: Logger

    init(
        configuration: GatewayConfiguration,
        store: GatewayStore,
        clock: WallClock,
        metrics: GatewayMetrics,
        logger: Logger
    ) {
        var client = HTTPClient.Configuration()
        client.tlsConfiguration = configuration.callbackTLS
        client.redirectConfiguration = .disallow
        client.timeout = .init(
            connect: TimeAmount(configuration.callbackTimeout),
            read: TimeAmount(configuration.callbackTimeout)
        )
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: client)
        self.store = store
        self.timeout = configuration.callbackTimeout
        self.retryWait = configuration.callbackRetryWait
        self.maximumAttempts = configuration.callbackMaximumAttempts
        self.allowPrivate = configuration.settings.allowPrivateCallbacks
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    func run() async throws {
        try? await gracefulShutdown()
        try await self.http.shutdown()
    }

    /// One pass over the due tasks.
    func deliver() async throws {
        for task in try await self.store.dueCallbackTasks(now: self.clock.now) {
            var components = URLComponents(string: task.url)
            components?.queryItems = [
                URLQueryItem(name: "batchTag", value: task.tag), URLQueryItem(name: "date", value: task.day),
            ]
            guard let url = components?.string,
                await CallbackURLCheck(allowPrivate: self.allowPrivate).problem(with: task.url) == nil
            else {
                try await self.fail(task, "the url is no longer acceptable")
                continue
            }
            var request = HTTPClientRequest(url: url)
            request.method = .GET
            do {
                let response = try await self.http.execute(request, timeout: TimeAmount(self.timeout))
                _ = try await response.body.collect(upTo: 64 * 1024)
                if (200...299).contains(response.status.code) {
                    try await self.store.completeCallbackTask(task.id)
                    self.metrics.recordCallback("delivered")
                } else {
                    try await self.fail(task, "status \(response.status.code)")
                }
            } catch is CancellationError {
                return
            } catch {
                try await self.fail(task, "transport: \(String(reflecting: type(of: error)))")
            }
        }
    }

    private func fail(_ task: GatewayStore.CallbackTask, _ reason: String) async throws {
        self.metrics.recordCallback("failed")
        self.logger.warning(
            "Callback failed",
            metadata: ["country": "\(task.country)", "attempt": "\(task.attempts + 1)", "failure": "\(reason)"]
        )
        try await self.store.failCallbackTask(
            task,
            wait: self.retryWait,
            maximumAttempts: self.maximumAttempts,
            now: self.clock.now
        )
    }
}
