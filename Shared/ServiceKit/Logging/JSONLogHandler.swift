// A swift-log handler that writes one JSON object per line, for log collectors.

import Foundation
package import Logging

/// Writes `{"time":…,"level":…,"label":…,"message":…,<metadata>}` lines to a stream (standard output by default).
/// Metadata keys keep their dotted names. The handler never adds a client address or request content;
/// what reaches it is what the code logs.
package struct JSONLogHandler: LogHandler {
    package var logLevel: Logger.Level
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let write: @Sendable (String) -> Void

    package init(
        label: String,
        level: Logger.Level,
        metadataProvider: Logger.MetadataProvider? = nil,
        write: @escaping @Sendable (String) -> Void = JSONLogHandler.standardOutput
    ) {
        self.label = label
        self.logLevel = level
        self.metadataProvider = metadataProvider
        self.write = write
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var merged = self.metadata
        if let provided = self.metadataProvider?.get() {
            merged.merge(provided) { _, new in new }
        }
        if let extra = event.metadata {
            merged.merge(extra) { _, new in new }
        }
        var object: [String: Any] = [:]
        for (key, value) in merged {
            object[key] = Self.jsonValue(value)
        }
        object["time"] = Self.timestamp()
        object["level"] = event.level.rawValue
        object["label"] = self.label
        object["message"] = event.message.description
        object["source"] = event.source
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: object,
                options: [.sortedKeys, .withoutEscapingSlashes]
            )
        else {
            return
        }
        self.write(String(decoding: data, as: UTF8.self))
    }

    /// Writes a line to standard output and flushes it, so lines from several threads never interleave.
    package static let standardOutput: @Sendable (String) -> Void = { line in
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    private static func jsonValue(_ value: Logger.MetadataValue) -> Any {
        switch value {
        case .string(let string): string
        case .stringConvertible(let convertible): convertible.description
        case .array(let array): array.map(Self.jsonValue)
        case .dictionary(let dictionary): dictionary.mapValues(Self.jsonValue)
        }
    }

    private static let timeFormat = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    private static func timestamp() -> String {
        self.timeFormat.format(Date())
    }
}
