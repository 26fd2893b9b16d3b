// Reads typed settings from flags and environment variables, collecting every problem before failing.

import Configuration
import Foundation

/// The one way services read configuration.
///
/// A setting is named by its environment variable (`HTTP_PORT`); the same setting is also a flag
/// (`--http-port`), and a flag wins over the environment. Every value is read as text and parsed here, so a
/// malformed value is reported instead of silently replaced by a default (what swift-configuration's
/// defaulting getters do). Problems are collected; `finish()` throws them all at once. Values of secret
/// settings never appear in messages or help output.
package final class SettingsReader {
    /// One documented setting, for `--help` and the unknown-flag check.
    package struct Setting: Sendable, Equatable {
        package let name: String
        package let defaultValue: String?
        package let help: String
        package let isSecret: Bool

        /// `--http-port` for `HTTP_PORT`.
        package var flag: String { SettingsReader.flag(for: self.name) }
    }

    private let reader: ConfigReader
    private let arguments: [String]
    private(set) package var problems: [String] = []
    private(set) package var settings: [Setting] = []

    /// A reader over the process's flags (first) and environment.
    package convenience init(arguments: [String], environment: [String: String]) {
        let providers: [any ConfigProvider] = [
            CommandLineArgumentsProvider(arguments: arguments),
            EnvironmentVariablesProvider(environmentVariables: environment),
        ]
        self.init(reader: ConfigReader(providers: providers), arguments: arguments)
    }

    /// A reader over environment-style values only, for tests.
    package convenience init(values: [String: String]) {
        self.init(arguments: ["test"], environment: values)
    }

    private init(reader: ConfigReader, arguments: [String]) {
        self.reader = reader
        self.arguments = arguments
    }

    // MARK: - Typed getters

    /// A text setting with a default.
    package func string(_ name: String, default defaultValue: String, help: String) -> String {
        self.document(name, defaultValue, help)
        return self.raw(name) ?? defaultValue
    }

    /// A text setting that may be absent. Secret values are redacted everywhere.
    package func optionalString(_ name: String, secret: Bool = false, help: String) -> String? {
        self.document(name, nil, help, secret: secret)
        return self.raw(name, secret: secret).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// A text setting that must be present; a missing value is recorded as a problem and `""` returned.
    package func requiredString(_ name: String, secret: Bool = false, help: String) -> String {
        self.document(name, nil, help, secret: secret)
        guard let value = self.raw(name, secret: secret), !value.isEmpty else {
            self.report(name, "is required")
            return ""
        }
        return value
    }

    /// Lists a setting the configuration does not read as it stands (it is read in another mode, named in `help`), so
    /// that `--help` shows every setting the binary can read and its flag is not an unknown option.
    package func describe(_ name: String, secret: Bool = false, help: String) {
        self.document(name, nil, help, secret: secret)
    }

    /// The file the required setting `name` names, read and turned into a value by `parse`. A missing setting, an
    /// unreadable file or one `parse` refuses is reported under `name` (as not "a readable <expected>", naming the path
    /// and never the content); `nil` then.
    package func requiredFile<Value>(
        _ name: String,
        expected: String,
        help: String,
        parse: (String) -> Value?
    ) -> Value? {
        let path = self.requiredString(name, help: help)
        guard !path.isEmpty else { return nil }
        if let text = try? String(contentsOfFile: path, encoding: .utf8), let value = parse(text) { return value }
        self.report(name, "\(path) is not a readable \(expected)")
        return nil
    }

    /// An http(s) base URL without a query, such as a peer's `http://127.0.0.1:8012`.
    package func httpURL(_ name: String, default defaultValue: String, help: String) -> String {
        let value = self.string(name, default: defaultValue, help: help)
        guard let url = URL(string: value), ["http", "https"].contains(url.scheme ?? ""), url.host != nil,
            url.query == nil
        else {
            self.report(name, "must be an http(s) URL such as \(defaultValue)")
            return value
        }
        return value
    }

    /// An integer within `range`.
    package func int(_ name: String, default defaultValue: Int, range: ClosedRange<Int>, help: String) -> Int {
        self.document(name, "\(defaultValue)", help)
        guard let text = self.raw(name) else { return defaultValue }
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)) else {
            self.report(name, "must be an integer, got '\(text)'")
            return defaultValue
        }
        guard range.contains(value) else {
            self.report(name, "must be between \(range.lowerBound) and \(range.upperBound), got \(value)")
            return defaultValue
        }
        return value
    }

    /// A boolean: `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`; a bare flag means true.
    package func bool(_ name: String, default defaultValue: Bool, help: String) -> Bool {
        self.document(name, "\(defaultValue)", help)
        if let text = self.raw(name) {
            switch text.lowercased() {
            case "true", "1", "yes", "on": return true
            case "false", "0", "no", "off": return false
            default:
                self.report(name, "must be true or false, got '\(text)'")
                return defaultValue
            }
        }
        return self.reader.bool(forKey: Self.key(name)) ?? defaultValue
    }

    /// A duration written as a number with a unit (`500ms`, `30s`, `15m`, `1h`, `2d`) or as plain seconds, at least
    /// `minimum` and at most ten years.
    package func duration(
        _ name: String,
        default defaultValue: Duration,
        minimum: Duration = .milliseconds(1),
        help: String
    ) -> Duration {
        self.document(name, Self.format(defaultValue), help)
        guard let text = self.raw(name) else { return defaultValue }
        guard let value = Self.parseDuration(text), value > .zero else {
            self.report(name, "must be a positive duration such as 30s, 15m, 1h or 2d, got '\(text)'")
            return defaultValue
        }
        guard value >= minimum else {
            self.report(name, "must be at least \(Self.format(minimum)), got '\(text)'")
            return defaultValue
        }
        return value
    }

    /// A comma-separated list; empty entries are dropped.
    package func list(_ name: String, help: String) -> [String] {
        self.document(name, nil, help)
        // raw() joins the values of a repeated or comma-split flag with commas, so one split serves both sources.
        return (self.raw(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
    }

    /// A value of a closed set of choices.
    package func choice<Choice: RawRepresentable & CaseIterable>(
        _ name: String,
        default defaultValue: Choice,
        help: String
    ) -> Choice where Choice.RawValue == String {
        self.document(name, defaultValue.rawValue, help)
        guard let text = self.raw(name) else { return defaultValue }
        guard let value = Choice(rawValue: text.lowercased()) else {
            let allowed = Choice.allCases.map(\.rawValue).joined(separator: ", ")
            self.report(name, "must be one of \(allowed), got '\(text)'")
            return defaultValue
        }
        return value
    }

    /// Records a problem found by cross-setting validation.
    package func report(_ name: String, _ problem: String) {
        self.problems.append("\(name) (\(Self.flag(for: name))) \(problem)")
    }

    /// Throws every recorded problem, plus flags no setting knows (typos would otherwise be ignored).
    package func finish() throws(ConfigurationError) {
        let known = Set(self.settings.map(\.flag) + ["--help"])
        for argument in self.arguments.dropFirst() where argument.hasPrefix("--") {
            let flag = String(argument.split(separator: "=", maxSplits: 1).first ?? "")
            if !known.contains(flag) {
                self.problems.append("unknown option \(flag)")
            }
        }
        if !self.problems.isEmpty {
            throw ConfigurationError(problems: self.problems)
        }
    }

    /// Whether `--help` was given.
    package var helpRequested: Bool { self.arguments.dropFirst().contains("--help") }

    /// A table of every setting read so far: flag, environment variable, default, meaning.
    package var helpText: String {
        var lines = ["Settings (flag or environment variable; a flag wins):", ""]
        for setting in self.settings {
            let value = setting.isSecret ? " (secret)" : setting.defaultValue.map { " [default: \($0)]" } ?? ""
            lines.append("  \(setting.flag), \(setting.name)\(value)")
            lines.append("      \(setting.help)")
        }
        return lines.joined(separator: "\n")
    }

    // MARK: - Internals

    private func document(_ name: String, _ defaultValue: String?, _ help: String, secret: Bool = false) {
        let setting = Setting(name: name, defaultValue: defaultValue, help: help, isSecret: secret)
        if !self.settings.contains(where: { $0.name == name }) {
            self.settings.append(setting)
        }
    }

    private func raw(_ name: String, secret: Bool = false) -> String? {
        let key = Self.key(name)
        // The flag parser splits values at commas; join them back so `--x a,b` reads as the text "a,b".
        // A bare flag (`--migrate-only`) has no values: no text, so `bool` reads it as a flag.
        return self.reader.string(forKey: key, isSecret: secret)
            ?? self.reader.stringArray(forKey: key, isSecret: secret).flatMap {
                $0.isEmpty ? nil : $0.joined(separator: ",")
            }
    }

    /// `--http-port` for `HTTP_PORT`.
    static func flag(for name: String) -> String {
        "--" + name.lowercased().replacingOccurrences(of: "_", with: "-")
    }

    /// `HTTP_PORT` → key `http.port` (environment `HTTP_PORT`, flag `--http-port`).
    private static func key(_ name: String) -> ConfigKey {
        ConfigKey(name.lowercased().split(separator: "_").map(String.init))
    }

    static func parseDuration(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(suffix: String, seconds: Double)] = [
            ("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400),
        ]
        // At most ten years, so the conversion to whole milliseconds cannot overflow.
        let limit = 10.0 * 365 * 86400
        for unit in units where trimmed.hasSuffix(unit.suffix) {
            guard let number = Double(trimmed.dropLast(unit.suffix.count)), number.isFinite, number >= 0,
                number * unit.seconds <= limit
            else { return nil }
            return .milliseconds(Int64((number * unit.seconds * 1000).rounded()))
        }
        guard let seconds = Double(trimmed), seconds.isFinite, seconds >= 0, seconds <= limit else { return nil }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    package static func format(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        // A default below a whole second (100ms, 10ms) would otherwise print as "0s".
        let milliseconds = duration.components.attoseconds / 1_000_000_000_000_000
        if milliseconds != 0 { return "\(seconds * 1000 + milliseconds)ms" }
        if seconds > 0, seconds % 86400 == 0 { return "\(seconds / 86400)d" }
        if seconds > 0, seconds % 3600 == 0 { return "\(seconds / 3600)h" }
        if seconds > 0, seconds % 60 == 0 { return "\(seconds / 60)m" }
        return "\(seconds)s"
    }
}

/// Every problem in a service's configuration; start-up stops and prints them all.
package struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    package let problems: [String]

    package init(problems: [String]) {
        self.problems = problems
    }

    package var description: String {
        (["invalid configuration:"] + self.problems.map { "  - \($0)" }).joined(separator: "\n")
    }
}
