// `cwa privacy-pool RUN.csv…`: the runs of `cwa privacy-check --samples` taken together, as an observer who watched
// them all would: one two-sample test of the pooled latencies, and a classifier that tells a dummy from a real
// submission by its latency and the latencies just before it, scored by cross-validation.

import ArgumentParser
import Foundation

struct PrivacyPool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "privacy-pool",
        abstract: "Pools privacy-check runs: a Kolmogorov–Smirnov test and a cross-validated classifier of latencies.",
        discussion: """
            Reads the CSV files `cwa privacy-check --samples` writes (kind, status, bytes, seconds, one line per \
            submission in the order they were sent). Exits 1 when the pooled test tells the latencies apart \
            (p ≤ 0.05) or the classifier is right more often than chance would allow (one-sided p ≤ 0.05).
            """
    )

    @Argument(help: "Sample files of privacy-check runs.")
    var files: [String]
    @Option(help: "How many latencies before each one the classifier looks at.")
    var context: Int = PrivacyClassifier.defaultContext
    @Option(help: "Folds of the cross-validation.")
    var folds: Int = 10

    func validate() throws {
        guard !self.files.isEmpty else { throw ValidationError("name at least one sample file") }
        guard (1...1000).contains(self.context) else { throw ValidationError("--context must be 1…1000") }
        guard (2...100).contains(self.folds) else { throw ValidationError("--folds must be 2…100") }
    }

    func run() throws {
        let runs = try self.files.map { file in
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ClientFailure("cannot read \(file)")
            }
            do {
                return try PrivacySamples(csv: String(decoding: data, as: UTF8.self))
            } catch {
                throw ClientFailure("\(file): \(error)")
            }
        }
        let report = PrivacyPoolReport(runs: runs, context: self.context, folds: self.folds)
        print(report.summary)
        if !report.indistinguishable { throw ExitCode(1) }
    }
}

/// One privacy-check run: each submission's kind and latency, in the order they were sent.
struct PrivacySamples: Equatable {
    var real: [Bool]
    var seconds: [Double]
}

extension PrivacySamples {
    /// The CSV of `cwa privacy-check --samples` (`PrivacyCheck.Sample.csvHeader`, then a line per sample).
    init(csv: String) throws(ClientFailure) {
        typealias Sample = PrivacyCheck.Sample
        var lines = csv.split(whereSeparator: \.isNewline).map(String.init)
        guard lines.first == Sample.csvHeader else { throw ClientFailure("not a privacy-check sample file") }
        lines.removeFirst()
        self.init(real: [], seconds: [])
        for (number, line) in lines.enumerated() {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            let kind = fields.first.map(String.init)
            guard fields.count == 4, kind == Sample.kind(real: true) || kind == Sample.kind(real: false),
                let seconds = Double(fields[3]), seconds.isFinite, seconds >= 0
            else { throw ClientFailure("line \(number + 2) is not \(Sample.csvHeader)") }
            self.real.append(kind == Sample.kind(real: true))
            self.seconds.append(seconds)
        }
        guard self.real.contains(true), self.real.contains(false) else {
            throw ClientFailure("a run needs real and dummy samples")
        }
    }
}

/// The pooled test and the classifier over several runs.
struct PrivacyPoolReport {
    let runs: Int
    let real: [Double]
    let dummy: [Double]
    let test: KolmogorovSmirnov
    let classifier: PrivacyClassifier.Score

    init(runs: [PrivacySamples], context: Int, folds: Int) {
        self.runs = runs.count
        self.real = runs.flatMap { run in zip(run.real, run.seconds).filter(\.0).map(\.1) }
        self.dummy = runs.flatMap { run in zip(run.real, run.seconds).filter { !$0.0 }.map(\.1) }
        self.test = KolmogorovSmirnov(self.real, self.dummy)
        self.classifier = PrivacyClassifier(context: context).crossValidated(runs, folds: folds)
    }

    /// Neither the pooled test nor the classifier tells dummies from real submissions at the 5 % level.
    var indistinguishable: Bool { self.test.pValue > 0.05 && self.classifier.pValue > 0.05 }

    var summary: String {
        let gap = (Self.median(self.dummy) - Self.median(self.real)) * 1000
        return [
            "privacy pool: \(self.runs) runs, \(self.real.count) real and \(self.dummy.count) dummy submissions",
            "  latency real  (ms): \(PrivacyCheck.percentiles(self.real))",
            "  latency dummy (ms): \(PrivacyCheck.percentiles(self.dummy))",
            String(format: "  median dummy − real: %+.3f ms", gap),
            String(
                format: "  Kolmogorov–Smirnov, pooled: D = %.4f, p = %.4g → %@",
                self.test.statistic,
                self.test.pValue,
                self.test.verdict
            ),
            String(
                format:
                    "  classifier (logistic regression on each latency and the %d before it, %d-fold cross-validated): %.2f %% right of %d, p = %.4g against chance → %@",
                self.classifier.context,
                self.classifier.folds,
                self.classifier.accuracy * 100,
                self.classifier.scored,
                self.classifier.pValue,
                self.classifier.pValue > 0.05
                    ? "no better than chance at the 5 % level" : "BETTER than chance at the 5 % level"
            ),
        ].joined(separator: "\n")
    }

    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}

/// The observer's classifier: for each submission it sees the latency and the `context` latencies before it in the
/// same run (whose kinds it does not know), and guesses real or dummy by a logistic regression on four features:
/// - where the latency lies against the ones before it (distance from their median, in interquartile ranges);
/// - its rank among them;
/// - how close it comes to one of them (log of the smallest gap: a replayed duration repeats);
/// - the latency itself (log, standardised over the run).
/// The score is the accuracy on held-out folds, and the one-sided binomial p-value of that many right guesses by
/// chance. A delay that is a draw from the distribution of real durations leaves it at 50 %.
struct PrivacyClassifier {
    static let defaultContext = 48
    let context: Int

    struct Score: Equatable {
        var context: Int
        var folds: Int
        var scored: Int
        var right: Int
        var accuracy: Double { self.scored == 0 ? 0.5 : Double(self.right) / Double(self.scored) }
        /// P(at least `right` of `scored` by fair coin flips), by the normal approximation with continuity correction.
        var pValue: Double {
            guard self.scored > 0 else { return 1 }
            let n = Double(self.scored)
            let z = (Double(self.right) - 0.5 - n / 2) / (n / 4).squareRoot()
            return 0.5 * erfc(z / 2.0.squareRoot())
        }
    }

    /// Each submission with at least `context` before it in its run: its features and whether it was real.
    func examples(_ runs: [PrivacySamples]) -> (features: [[Double]], real: [Bool]) {
        var features: [[Double]] = []
        var real: [Bool] = []
        for run in runs where run.seconds.count > self.context {
            let logs = run.seconds.map { log(max($0, 1e-6)) }
            let mean = logs.reduce(0, +) / Double(logs.count)
            let spread = max(
                (logs.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(logs.count)).squareRoot(),
                1e-9
            )
            for index in self.context..<run.seconds.count {
                let latency = run.seconds[index]
                let before = run.seconds[(index - self.context)..<index].sorted()
                let median = before[before.count / 2]
                let quartiles = before[(3 * before.count) / 4] - before[before.count / 4]
                let below = before.reduce(0) { $0 + ($1 < latency ? 1 : 0) }
                let nearest = before.map { abs($0 - latency) }.min() ?? 0
                features.append([
                    (latency - median) / max(quartiles, 1e-6),
                    Double(below) / Double(before.count),
                    log10(nearest + 1e-6),
                    (logs[index] - mean) / spread,
                ])
                real.append(run.real[index])
            }
        }
        return (features, real)
    }

    /// Trains on all folds but one and scores the held-out one, for every fold (fold = position modulo `folds`).
    func crossValidated(_ runs: [PrivacySamples], folds: Int) -> Score {
        let (features, real) = self.examples(runs)
        var right = 0
        for fold in 0..<folds {
            let training = features.indices.filter { $0 % folds != fold }
            let held = features.indices.filter { $0 % folds == fold }
            guard !training.isEmpty, !held.isEmpty else { continue }
            let model = LogisticRegression(
                features: training.map { features[$0] },
                labels: training.map { real[$0] }
            )
            right += held.reduce(0) { $0 + (model.predicts(features[$1]) == real[$1] ? 1 : 0) }
        }
        return Score(context: self.context, folds: folds, scored: features.count, right: right)
    }
}

/// Logistic regression with an intercept, on standardised features, fitted by Newton's method (iteratively
/// reweighted least squares) with a small ridge so that separable or constant features cannot make it diverge.
struct LogisticRegression {
    private let means: [Double]
    private let scales: [Double]
    private let weights: [Double]

    init(features: [[Double]], labels: [Bool], ridge: Double = 1e-3, iterations: Int = 25) {
        let width = features.first?.count ?? 0
        let count = Double(max(features.count, 1))
        let means = (0..<width).map { column in features.reduce(0) { $0 + $1[column] } / count }
        let scales = (0..<width).map { column in
            max((features.reduce(0) { $0 + pow($1[column] - means[column], 2) } / count).squareRoot(), 1e-12)
        }
        self.means = means
        self.scales = scales
        let rows = features.map { row in [1] + (0..<width).map { (row[$0] - means[$0]) / scales[$0] } }
        let targets = labels.map { $0 ? 1.0 : 0.0 }
        var weights = [Double](repeating: 0, count: width + 1)
        for _ in 0..<iterations {
            // Gradient and Hessian of the penalised log-likelihood.
            var gradient = weights.map { -ridge * $0 * count }
            var hessian = (0...width).map { row in (0...width).map { $0 == row ? ridge * count : 0 } }
            for (row, target) in zip(rows, targets) {
                let probability = Self.sigmoid(zip(weights, row).reduce(0) { $0 + $1.0 * $1.1 })
                let weight = max(probability * (1 - probability), 1e-9)
                for i in 0...width {
                    gradient[i] += (target - probability) * row[i]
                    for j in 0...width { hessian[i][j] += weight * row[i] * row[j] }
                }
            }
            guard let step = Self.solve(hessian, gradient) else { break }
            weights = zip(weights, step).map { $0 + $1 }
            if step.map(abs).max() ?? 0 < 1e-8 { break }
        }
        self.weights = weights
    }

    /// Whether the model guesses "real" (label true) for `features`.
    func predicts(_ features: [Double]) -> Bool {
        let row = [1] + features.indices.map { (features[$0] - self.means[$0]) / self.scales[$0] }
        return zip(self.weights, row).reduce(0) { $0 + $1.0 * $1.1 } > 0
    }

    static func sigmoid(_ value: Double) -> Double { 1 / (1 + exp(-value)) }

    /// `matrix · x = vector` by Gaussian elimination with partial pivoting; nil when singular.
    static func solve(_ matrix: [[Double]], _ vector: [Double]) -> [Double]? {
        var a = matrix
        var b = vector
        let n = b.count
        for column in 0..<n {
            guard let pivot = (column..<n).max(by: { abs(a[$0][column]) < abs(a[$1][column]) }),
                abs(a[pivot][column]) > 1e-12
            else { return nil }
            a.swapAt(column, pivot)
            b.swapAt(column, pivot)
            for row in (column + 1)..<n {
                let factor = a[row][column] / a[column][column]
                for k in column..<n { a[row][k] -= factor * a[column][k] }
                b[row] -= factor * b[column]
            }
        }
        var x = [Double](repeating: 0, count: n)
        for row in stride(from: n - 1, through: 0, by: -1) {
            let rest = ((row + 1)..<n).reduce(0) { $0 + a[row][$1] * x[$1] }
            x[row] = (b[row] - rest) / a[row][row]
        }
        return x
    }
}
