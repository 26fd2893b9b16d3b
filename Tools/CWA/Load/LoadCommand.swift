// `cwa load submissions|fake|polls --rate R --duration D`: an open-loop load at a fixed rate through the gateway,
// with progress while it runs and throughput and an HDR latency histogram at the end.

import ArgumentParser
import Foundation
import Histogram
import Synchronization

enum LoadKind: String, ExpressibleByArgument, CaseIterable {
    /// Real key submissions, each with its own TAN (prepared beforehand: lab upload, registration, TAN).
    case submissions
    /// Dummy submissions (`cwa-fake: 1`).
    case fake
    /// Result polls of registered tests.
    case polls
}

struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Send requests at a fixed rate and report throughput and latency.",
        discussion: """
            Requests start on schedule whether or not earlier ones have finished (an open loop), and latency is measured
            from the scheduled start, so a slow server cannot hide its queueing. What real requests need (TANs,
            registration tokens) is prepared before the clock starts.
            """
    )

    @Argument(help: "submissions, fake or polls.")
    var kind: LoadKind
    @OptionGroup var gateway: GatewayOptions
    @OptionGroup var lab: LabOptions
    @Option(help: "Requests per second.")
    var rate: Double = 50
    @Option(help: "Seconds to send for.")
    var duration: Double = 10
    @Option(
        name: .customLong("max-in-flight"),
        help: "Most requests outstanding at once; further starts wait (and their latency counts the wait)."
    )
    var maxInFlight: Int = 512

    func validate() throws {
        guard self.rate > 0, self.rate <= 100_000 else { throw ValidationError("--rate must be in (0, 100000]") }
        guard self.duration > 0, self.duration <= 3600 else { throw ValidationError("--duration must be in (0, 3600]") }
        guard self.maxInFlight > 0 else { throw ValidationError("--max-in-flight must be positive") }
    }

    func run() async throws {
        let total = Int((self.rate * self.duration).rounded())
        let app = try self.gateway.client(connections: min(self.maxInFlight, 256))
        let report = try await withGateway(app) { app in
            let request = try await self.prepare(total: total, app: app)
            printProgress("sending \(total) \(self.kind.rawValue) at \(self.rate)/s for \(self.duration) s")
            return await OpenLoop(rate: self.rate, total: total, maxInFlight: self.maxInFlight).run(request)
        }
        print(
            report.summary(
                title: "load \(self.kind.rawValue): \(total) requests at \(self.rate)/s through \(self.gateway.app)"
            )
        )
        if report.failures > 0 { throw ExitCode(3) }
    }

    /// The request of number `index`, with what it needs prepared.
    private func prepare(total: Int, app: GatewayClient) async throws -> @Sendable (Int) async throws -> Reply {
        let base = self.gateway.app
        switch self.kind {
        case .fake:
            // Dummies store nothing, so a pool of bodies serves any number of them; built before the clock starts.
            let payloads = try (0..<min(total, 256)).map { _ in try SubmissionBuilder.withRandomKeys(now: Date()) }
            return { index in
                try await SubmissionCalls.fake(client: app, app: base, payload: payloads[index % payloads.count])
            }
        case .submissions:
            let tans = try await Provisioner.with(app: app, gateway: self.gateway, lab: self.lab) {
                try await $0.tans(total, progress: printProgress)
            }
            let payloads = try (0..<total).map { _ in try SubmissionBuilder.withRandomKeys(now: Date()) }
            return { index in
                try await SubmissionCalls.submit(client: app, app: base, tan: tans[index], payload: payloads[index])
            }
        case .polls:
            let tokens = try await Provisioner.with(app: app, gateway: self.gateway, lab: self.lab) {
                try await $0.registrationTokens(min(total, 1000), progress: printProgress)
            }
            return { index in
                try await RegistrationCalls.poll(
                    client: app,
                    app: base,
                    registrationToken: tokens[index % tokens.count]
                )
            }
        }
    }
}

/// A line on standard error (progress), so standard output holds only the report.
func printProgress(_ line: String) {
    FileHandle.standardError.write(Data("  \(line)\n".utf8))
}

/// Starts request `i` at `start + i / rate`, keeps at most `maxInFlight` outstanding, and records every outcome.
struct OpenLoop {
    let rate: Double
    let total: Int
    let maxInFlight: Int

    func run(_ request: @escaping @Sendable (Int) async throws -> Reply) async -> LoadReport {
        let recorder = Recorder()
        let start = ContinuousClock.now
        let progress = Task {
            var second = 0
            while !Task.isCancelled {
                second += 1
                try? await Task.sleep(until: start + .seconds(second), clock: .continuous)
                if Task.isCancelled { break }
                let snapshot = recorder.state.withLock { $0 }
                printProgress(
                    "\(second) s: \(snapshot.completed) done, \(snapshot.failures) failed, p50 \(snapshot.millis(50)) ms, p99 \(snapshot.millis(99)) ms"
                )
            }
        }
        await withTaskGroup(of: Void.self) { group in
            var inFlight = 0
            for index in 0..<self.total {
                let scheduled = start + .nanoseconds(Int64(Double(index) / self.rate * 1e9))
                try? await Task.sleep(until: scheduled, clock: .continuous)
                if inFlight >= self.maxInFlight {
                    await group.next()
                    inFlight -= 1
                }
                inFlight += 1
                group.addTask {
                    let outcome: Result<Reply, any Error>
                    do { outcome = .success(try await request(index)) } catch { outcome = .failure(error) }
                    let latency = ContinuousClock.now - scheduled
                    recorder.state.withLock { $0.record(outcome, latency: latency) }
                }
            }
            await group.waitForAll()
        }
        progress.cancel()
        var report = recorder.state.withLock { $0 }
        report.elapsed = ContinuousClock.now - start
        return report
    }
}

/// The report, shared by the requests in flight and the progress line.
final class Recorder: Sendable {
    let state = Mutex(LoadReport())
}

/// Counts, statuses and the latency histogram of a load run.
struct LoadReport: Sendable {
    /// Microseconds, 1 µs to 10 min, 3 significant digits.
    var latency = Histogram<UInt64>(
        lowestDiscernibleValue: 1,
        highestTrackableValue: 600_000_000,
        numberOfSignificantValueDigits: .three
    )
    var statuses: [Int: Int] = [:]
    var errors: [String: Int] = [:]
    var completed = 0
    var elapsed: Duration = .zero

    var failures: Int {
        self.errors.values.reduce(0, +) + self.statuses.filter { !(200..<300).contains($0.key) }.values.reduce(0, +)
    }

    mutating func record(_ outcome: Result<Reply, any Error>, latency: Duration) {
        self.completed += 1
        switch outcome {
        case .success(let reply): self.statuses[reply.status, default: 0] += 1
        case .failure(let error): self.errors[String(describing: error).prefix(120).description, default: 0] += 1
        }
        let micros = max(1, Int64(latency / .microseconds(1)))
        _ = self.latency.record(UInt64(min(micros, 600_000_000)))
    }

    func millis(_ percentile: Double) -> String {
        self.latency.totalCount == 0
            ? "-" : String(format: "%.1f", Double(self.latency.valueAtPercentile(percentile)) / 1000)
    }

    func summary(title: String) -> String {
        let seconds = self.elapsed / .seconds(1)
        var lines = [title]
        let statuses = self.statuses.sorted { $0.key < $1.key }.map { "HTTP \($0.key): \($0.value)" }.joined(
            separator: ", "
        )
        lines.append(
            "  completed \(self.completed) in \(String(format: "%.1f", seconds)) s: \(statuses.isEmpty ? "no answers" : statuses)"
        )
        for (error, count) in self.errors.sorted(by: { $0.value > $1.value }) {
            lines.append("  error ×\(count): \(error)")
        }
        lines.append("  throughput \(String(format: "%.1f", Double(self.completed) / max(seconds, 0.001))) requests/s")
        lines.append(
            "  latency from the scheduled start: p50 \(self.millis(50)) ms, p90 \(self.millis(90)) ms, p99 \(self.millis(99)) ms, p99.9 \(self.millis(99.9)) ms, max \(self.millis(100)) ms"
        )
        var histogram = ""
        self.latency.outputPercentileDistribution(to: &histogram, outputValueUnitScalingRatio: 1000)
        lines.append("  HDR histogram (values in ms):")
        lines += histogram.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }
        return lines.joined(separator: "\n")
    }
}
