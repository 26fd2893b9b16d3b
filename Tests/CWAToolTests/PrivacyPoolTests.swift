// The pooled privacy check: sample files, the pooled test and the observer's classifier on synthetic runs.

import ENTestSupport
import Foundation
import Testing

@testable import CWATool

@Suite("cwa privacy-pool")
struct PrivacyPoolTests {
    @Test("a sample file reads as kinds and latencies in order; a file that is not one is refused with its line")
    func sampleFiles() throws {
        let run = try PrivacySamples(csv: "kind,status,bytes,seconds\nreal,200,305,0.0081\ndummy,200,305,0.0079\n")
        #expect(run == PrivacySamples(real: [true, false], seconds: [0.0081, 0.0079]))
        #expect(throws: ClientFailure.self) { try PrivacySamples(csv: "kind,seconds\nreal,0.1\n") }
        let broken = #expect(throws: ClientFailure.self) {
            try PrivacySamples(csv: "kind,status,bytes,seconds\nreal,200,305,0.0081\nfake,200,305,x\n")
        }
        #expect(broken?.description == "line 3 is not kind,status,bytes,seconds")
        #expect(throws: ClientFailure.self) {
            try PrivacySamples(csv: "kind,status,bytes,seconds\nreal,200,305,0.01\n")
        }
    }

    @Test("dummies drawn from the real latencies' distribution: the pooled test and the classifier find nothing")
    func sameDistribution() {
        var random = SeededGenerator(seed: 7)
        let runs = (0..<10).map { _ in Self.run(&random) { _, generator in Self.latency(&generator) } }
        let report = PrivacyPoolReport(runs: runs, context: 48, folds: 10)
        #expect(report.real.count == 5000)
        #expect(report.dummy.count == 5000)
        #expect(report.test.pValue > 0.05)
        #expect(report.classifier.scored == 10 * (1000 - 48))
        #expect(report.classifier.pValue > 0.05)
        #expect(abs(report.classifier.accuracy - 0.5) < 0.02)
        #expect(report.indistinguishable)
        #expect(report.summary.contains("not distinguishable at the 5 % level"))
        #expect(report.summary.contains("no better than chance at the 5 % level"))
    }

    @Test("dummies 0.1 ms slower than real submissions of about 8 ms, as the outside check found: both tell them apart")
    func slowerDummies() {
        var random = SeededGenerator(seed: 11)
        let runs = (0..<10).map { _ in
            Self.run(&random) { real, generator in Self.latency(&generator) + (real ? 0 : 0.0001) }
        }
        let report = PrivacyPoolReport(runs: runs, context: 48, folds: 10)
        #expect(report.test.pValue < 0.001)
        #expect(report.classifier.pValue < 0.05)
        #expect(report.classifier.accuracy > 0.5)
        #expect(!report.indistinguishable)
        #expect(report.summary.contains("DISTINGUISHABLE at the 5 % level"))
    }

    @Test("dummies that replay one of the last 16 real latencies: the classifier notices the repeats")
    func replayedDurations() {
        var random = SeededGenerator(seed: 13)
        let runs = (0..<10).map { _ in
            var recent: [Double] = []
            return Self.run(&random) { real, generator in
                guard !real, recent.count >= 8 else {
                    let latency = Self.latency(&generator)
                    if real { recent = Array((recent + [latency]).suffix(16)) }
                    return latency
                }
                return recent[Int.random(in: 0..<recent.count, using: &generator)]
            }
        }
        let report = PrivacyPoolReport(runs: runs, context: 48, folds: 10)
        #expect(report.classifier.accuracy > 0.55)
        #expect(report.classifier.pValue < 1e-6)
    }

    @Test("the regression's solver and fit: a known system, and separable labels predicted")
    func logisticRegression() throws {
        let x = try #require(LogisticRegression.solve([[2, 1], [1, 3]], [3, 5]))
        #expect(abs(x[0] - 0.8) < 1e-12 && abs(x[1] - 1.4) < 1e-12)
        #expect(LogisticRegression.solve([[1, 2], [2, 4]], [1, 2]) == nil)
        let features = (0..<200).map { [Double($0)] }
        let model = LogisticRegression(features: features, labels: (0..<200).map { $0 >= 100 })
        #expect(model.predicts([150]))
        #expect(!model.predicts([50]))
    }

    /// One run of 500 real and 500 dummy submissions in a random order; `latency` gives each one's seconds.
    private static func run(
        _ random: inout SeededGenerator,
        latency: (Bool, inout SeededGenerator) -> Double
    ) -> PrivacySamples {
        let kinds = (Array(repeating: true, count: 500) + Array(repeating: false, count: 500)).shuffled(using: &random)
        var seconds: [Double] = []
        for real in kinds { seconds.append(latency(real, &random)) }
        return PrivacySamples(real: kinds, seconds: seconds)
    }

    /// About 8 ms, log-normal with 10 % spread, as submissions through the gateway measure.
    private static func latency(_ random: inout SeededGenerator) -> Double {
        let u1 = Double.random(in: Double.ulpOfOne..<1, using: &random)
        let u2 = Double.random(in: 0..<1, using: &random)
        let normal = (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
        return 0.008 * exp(0.1 * normal)
    }
}
