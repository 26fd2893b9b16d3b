// The samples a service's registry exports on /metrics, read back by tests.

package import ENServiceKit
import Foundation
import Prometheus

/// One line of the Prometheus text format: `name{label="value",…} value`.
package struct MetricSample: Sendable, Equatable {
    package var name: String
    package var labels: [String: String]
    package var value: Double

    package init(name: String, labels: [String: String], value: Double) {
        self.name = name
        self.labels = labels
        self.value = value
    }
}

extension ServiceEnvironment {
    /// The samples named `name` that the registry exports now, as `/metrics` would serve them.
    package func metricSamples(_ name: String) -> [MetricSample] {
        var buffer: [UInt8] = []
        self.metricsRegistry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
            .split(separator: "\n")
            .compactMap { MetricSample(line: $0) }
            .filter { $0.name == name }
    }
}

extension MetricSample {
    /// Reads a sample line; comments and lines of another shape are nil. Label values hold no `"` or `,` in our
    /// metrics, so they are not unescaped.
    init?(line: Substring) {
        guard !line.hasPrefix("#"), let space = line.lastIndex(of: " "),
            let value = Double(line[line.index(after: space)...])
        else { return nil }
        let series = line[..<space]
        var labels: [String: String] = [:]
        if let open = series.firstIndex(of: "{") {
            guard series.hasSuffix("}") else { return nil }
            for pair in series[series.index(after: open)..<series.index(before: series.endIndex)].split(separator: ",")
            {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { return nil }
                labels[String(parts[0])] = String(parts[1].trimmingCharacters(in: ["\""]))
            }
            self.init(name: String(series[..<open]), labels: labels, value: value)
        } else {
            self.init(name: String(series), labels: labels, value: value)
        }
    }
}
