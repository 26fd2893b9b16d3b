// Runs an application on a real socket for the duration of a test.

package import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// Starts `app` (which must be configured for port 0), waits until it listens, runs `body` with the bound port,
/// then shuts the application down gracefully. An application that stops before it listens (a port it cannot bind,
/// a start-up step that throws) ends the wait with its error instead of leaving the test waiting.
package enum LiveServer {
    package static func run<App: ApplicationProtocol>(
        _ app: App,
        _ body: @Sendable (_ port: Int) async throws -> Void
    ) async throws {
        let reporting = PortReportingApplication(base: app)
        let group = ServiceGroup(services: [reporting], gracefulShutdownSignals: [], logger: app.logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                // Whichever way the run ends, a wait for the port that is still open ends with it.
                defer { reporting.port.fulfil(nil) }
                try await group.run()
            }
            guard let port = await reporting.port.wait() else {
                try await tasks.waitForAll()
                throw LiveServerError()
            }
            do {
                try await body(port)
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}

/// The application's run ended without an error before it listened.
struct LiveServerError: Error, CustomStringConvertible {
    var description: String { "the application stopped before it listened" }
}

/// The base application, also reporting the port it bound (`nil` once its run ended without binding one).
struct PortReportingApplication<Base: ApplicationProtocol>: ApplicationProtocol {
    typealias Responder = Base.Responder
    let base: Base
    let port = OneShot<Int?>()

    var responder: Responder { get async throws { try await self.base.responder } }
    var server: HTTPServerBuilder { self.base.server }
    var eventLoopGroup: any EventLoopGroup { self.base.eventLoopGroup }
    var configuration: ApplicationConfiguration { self.base.configuration }
    var logger: Logger { self.base.logger }
    var services: [any Service] { self.base.services }
    var processesRunBeforeServerStart: [@Sendable () async throws -> Void] { self.base.processesRunBeforeServerStart }

    @Sendable func onServerRunning(_ channel: any Channel) async {
        await self.base.onServerRunning(channel)
        self.port.fulfil(channel.localAddress?.port ?? 0)
    }
}

/// A value delivered once and awaited by any number of tasks.
package final class OneShot<Value: Sendable>: Sendable {
    private enum State {
        case waiting([CheckedContinuation<Value, Never>])
        case done(Value)
    }

    private let state = Mutexed<State>(.waiting([]))

    package init() {}

    package func fulfil(_ value: Value) {
        let waiters: [CheckedContinuation<Value, Never>] = self.state.withLock { state in
            guard case .waiting(let waiters) = state else { return [] }
            state = .done(value)
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    package func wait() async -> Value {
        await withCheckedContinuation { continuation in
            let ready: Value? = self.state.withLock { state in
                switch state {
                case .waiting(var waiters):
                    waiters.append(continuation)
                    state = .waiting(waiters)
                    return nil
                case .done(let value):
                    return value
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// Runs `body`, then `cleanup`, also when `body` throws; `body`'s error wins over `cleanup`'s.
package func withCleanup<Result>(
    _ body: () async throws -> Result,
    cleanup: () async throws -> Void
) async throws -> Result {
    let result: Result
    do {
        result = try await body()
    } catch {
        try? await cleanup()
        throw error
    }
    try await cleanup()
    return result
}
