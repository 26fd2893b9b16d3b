// `cwa privacy-check --requests N`: can an observer of the traffic tell a real submission from a dummy? Compares
// the answers' sizes and, with a two-sample Kolmogorov–Smirnov test, their latencies.

import ArgumentParser
import Foundation

struct PrivacyCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "privacy-check",
        abstract: "N real and N dummy submissions, shuffled: answer sizes and a Kolmogorov–Smirnov test of latencies.",
        discussion: "Goal: identical sizes and p > 0.05 (the latencies are not distinguishable at the 5 % level)."
    )

    @OptionGroup var gateway: GatewayOptions
    @OptionGroup var lab: LabOptions
    @Option(help: "Real submissions, and as many dummies.")
    var requests: Int = 100
    @Option(help: "Requests in flight at once.")
    var concurrency: Int = 1
    @Option(help: "Write every sample (kind, status, size, seconds) as CSV to this file.")
    var samples: String?

    func validate() throws {
        guard (2...100_000).contains(self.requests) else { throw ValidationError("--requests must be 2…100000") }
        guard (1...64).contains(self.concurrency) else { throw ValidationError("--concurrency must be 1…64") }
    }

    func run() async throws {
        let app = try self.gateway.client()
        let samples = try await withGateway(app) { app in
            let tans = try await Provisioner.with(app: app, gateway: self.gateway, lab: self.lab) {
                try await $0.tans(self.requests, progress: printProgress)
            }
            // Real and dummy in a random order, so drift in the server's state affects both alike.
            let order = (Array(repeating: true, count: self.requests) + Array(repeating: false, count: self.requests))
                .shuffled()
            printProgress("sending \(order.count) submissions, \(self.concurrency) at a time")
            return try await self.send(order: order, tans: tans, app: app)
        }
        if let file = self.samples {
            let lines = [Sample.csvHeader] + samples.map(\.csvLine)
            guard
                FileManager.default.createFile(
                    atPath: file,
                    contents: Data((lines.joined(separator: "\n") + "\n").utf8)
                )
            else {
                throw ClientFailure("cannot write \(file)")
            }
        }
        let real = samples.filter(\.real)
        let fake = samples.filter { !$0.real }
        let realSizes = Set(real.map(\.size)).sorted()
        let fakeSizes = Set(fake.map(\.size)).sorted()
        let realStatuses = Dictionary(grouping: real, by: \.status).mapValues(\.count)
        let fakeStatuses = Dictionary(grouping: fake, by: \.status).mapValues(\.count)
        let test = KolmogorovSmirnov(real.map(\.seconds), fake.map(\.seconds))

        print("privacy check: \(self.requests) real and \(self.requests) dummy submissions through \(self.gateway.app)")
        print("  statuses: real \(Self.describe(realStatuses)), dummy \(Self.describe(fakeStatuses))")
        print(
            "  answer sizes (bytes): real \(realSizes.map(String.init).joined(separator: ", ")); dummy \(fakeSizes.map(String.init).joined(separator: ", ")) → \(realSizes == fakeSizes && realSizes.count == 1 ? "identical" : "DIFFERENT")"
        )
        print("  latency real  (ms): \(Self.percentiles(real.map(\.seconds)))")
        print("  latency dummy (ms): \(Self.percentiles(fake.map(\.seconds)))")
        print(
            String(
                format: "  Kolmogorov–Smirnov: D = %.4f, p = %.4f → %@",
                test.statistic,
                test.pValue,
                test.verdict
            )
        )
        guard realStatuses.keys.allSatisfy({ $0 == 200 }), fakeStatuses.keys.allSatisfy({ $0 == 200 }),
            realSizes == fakeSizes
        else { throw ExitCode(3) }
    }

    struct Sample: Sendable {
        var real: Bool
        var status: Int
        var size: Int
        var seconds: Double

        /// The first line of a `--samples` file; each sample is a line of these columns (`csvLine`).
        static let csvHeader = "kind,status,bytes,seconds"
        static func kind(real: Bool) -> String { real ? "real" : "dummy" }
        var csvLine: String { "\(Self.kind(real: self.real)),\(self.status),\(self.size),\(self.seconds)" }
    }

    private func send(order: [Bool], tans: [String], app: GatewayClient) async throws -> [Sample] {
        let base = self.gateway.app
        return try await withThrowingTaskGroup(of: Sample.self) { group in
            var samples: [Sample] = []
            var nextTAN = 0
            for (index, real) in order.enumerated() {
                if index >= self.concurrency, let sample = try await group.next() { samples.append(sample) }
                let tan = real ? tans[nextTAN] : nil
                if real { nextTAN += 1 }
                group.addTask {
                    let reply: Reply
                    let payload = try SubmissionBuilder.withRandomKeys(now: Date())
                    if let tan {
                        reply = try await SubmissionCalls.submit(client: app, app: base, tan: tan, payload: payload)
                    } else {
                        reply = try await SubmissionCalls.fake(client: app, app: base, payload: payload)
                    }
                    return Sample(real: tan != nil, status: reply.status, size: reply.wireSize, seconds: reply.seconds)
                }
            }
            while let sample = try await group.next() { samples.append(sample) }
            return samples
        }
    }

    static func describe(_ statuses: [Int: Int]) -> String {
        statuses.sorted { $0.key < $1.key }.map { "HTTP \($0.key) ×\($0.value)" }.joined(separator: ", ")
    }

    static func percentiles(_ seconds: [Double]) -> String {
        let sorted = seconds.sorted()
        func at(_ p: Double) -> String {
            let rank = max(0, min(sorted.count - 1, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
            return String(format: "%.1f", sorted[rank] * 1000)
        }
        return "p50 \(at(50)), p90 \(at(90)), p99 \(at(99)), max \(at(100))"
    }
}

/// The two-sample Kolmogorov–Smirnov test: the largest distance between the two empirical distribution functions,
/// and its asymptotic p-value (Kolmogorov's distribution with Stephens' small-sample correction).
struct KolmogorovSmirnov {
    let statistic: Double
    let pValue: Double

    init(_ first: [Double], _ second: [Double]) {
        let a = first.sorted()
        let b = second.sorted()
        guard !a.isEmpty, !b.isEmpty else {
            self.statistic = 0
            self.pValue = 1
            return
        }
        var i = 0
        var j = 0
        var distance = 0.0
        while i < a.count && j < b.count {
            let value = min(a[i], b[j])
            while i < a.count && a[i] <= value { i += 1 }
            while j < b.count && b[j] <= value { j += 1 }
            distance = max(distance, abs(Double(i) / Double(a.count) - Double(j) / Double(b.count)))
        }
        self.statistic = distance
        let effective = Double(a.count * b.count) / Double(a.count + b.count)
        let lambda = (effective.squareRoot() + 0.12 + 0.11 / effective.squareRoot()) * distance
        self.pValue = Self.kolmogorovTail(lambda)
    }

    /// The test's answer at the 5 % level, as the privacy checks print it.
    var verdict: String {
        self.pValue > 0.05 ? "not distinguishable at the 5 % level" : "DISTINGUISHABLE at the 5 % level"
    }

    /// Q(λ) = 2 Σ_{k≥1} (−1)^{k−1} e^{−2k²λ²}, which is 1 at λ = 0.
    static func kolmogorovTail(_ lambda: Double) -> Double {
        guard lambda > 0.001 else { return 1 }
        var sum = 0.0
        for k in 1...200 {
            let term = exp(-2 * Double(k * k) * lambda * lambda)
            sum += (k % 2 == 1 ? term : -term)
            if term < 1e-12 { break }
        }
        return min(1, max(0, 2 * sum))
    }
}
