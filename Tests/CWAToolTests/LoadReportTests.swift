// Load reports and the Kolmogorov–Smirnov test of the privacy check.

import Crypto
import ENModels
import Foundation
import SwiftProtobuf
import Testing

@testable import CWATool

@Suite("cwa load reports")
struct LoadReportTests {
    @Test("a load report counts statuses, errors and failures and prints percentiles")
    func loadReport() throws {
        var report = LoadReport()
        for millis in 1...100 {
            report.record(
                .success(Reply(status: millis <= 98 ? 200 : 503, headers: [], body: [], seconds: 0)),
                latency: .milliseconds(millis)
            )
        }
        report.record(.failure(ClientFailure("connection refused")), latency: .milliseconds(5))
        report.elapsed = .seconds(2)

        #expect(report.completed == 101)
        #expect(report.failures == 3)
        #expect(report.statuses == [200: 98, 503: 2])
        let p50 = try #require(Double(report.millis(50)))
        #expect(abs(p50 - 50) < 1)
        let summary = report.summary(title: "test")
        #expect(summary.contains("HTTP 200: 98, HTTP 503: 2"))
        #expect(summary.contains("throughput 50.5 requests/s"))
        #expect(summary.contains("HDR histogram"))
    }

    @Test("Kolmogorov–Smirnov: equal samples give D 0 and p 1, disjoint ones D 1 and p ≈ 0, λ 1.358 the 5 % level")
    func kolmogorovSmirnov() {
        let sample = (0..<200).map { Double($0) }
        let same = KolmogorovSmirnov(sample, sample.shuffled())
        let disjoint = KolmogorovSmirnov(sample, sample.map { $0 + 1000 })
        let shifted = KolmogorovSmirnov(sample, sample.map { $0 + 20 })

        #expect(same.statistic == 0)
        #expect(same.pValue == 1)
        #expect(disjoint.statistic == 1)
        #expect(disjoint.pValue < 1e-6)
        #expect(abs(shifted.statistic - 0.1) < 1e-9)
        #expect(shifted.pValue > 0.1 && shifted.pValue < 0.5)
        #expect(abs(KolmogorovSmirnov.kolmogorovTail(1.358) - 0.05) < 0.001)
    }
}
