// The v2 app configurations the distribution publishes, read from a versioned JSON file (cwa-server §2.3, §4).

import ENModels
import Foundation

/// Both v2 messages, built from a file that decoded and validated; a bad file stops the run at start-up with an
/// `AppConfigurationError` naming the field.
struct AppConfiguration: Sendable {
    /// The iOS message (`app_config_ios`).
    let ios: ApplicationConfigurationIOS
    /// The Android message (`app_config_android`).
    let android: ApplicationConfigurationAndroid

    /// The bundled default file, `Resources/app-config.json`. If the resource is missing, this is where it should
    /// have been, so `load(contentsOf:)` reports it as unreadable instead of the process trapping.
    static var bundledFileURL: URL {
        Bundle.module.url(forResource: "app-config", withExtension: "json")
            ?? Bundle.module.bundleURL.appendingPathComponent("app-config.json")
    }

    /// Reads, decodes and validates the file; every problem is an AppConfigurationError naming the field.
    static func load(contentsOf url: URL) throws(AppConfigurationError) -> AppConfiguration {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw AppConfigurationError(
                field: url.path(percentEncoded: false),
                problem: "cannot be read: \(error.localizedDescription)"
            )
        }
        return try Self.decode(data)
    }

    /// Decodes and validates the file's JSON, then builds both messages.
    static func decode(_ data: Data) throws(AppConfigurationError) -> AppConfiguration {
        let file = try AppConfigurationFile.decode(data)
        try file.validate()
        return AppConfiguration(
            ios: AppConfigurationMessages.ios(from: file),
            android: AppConfigurationMessages.android(from: file)
        )
    }
}
