// `distribution-service publish availability`: the NHS availability documents, signed and published now.

import ArgumentParser
import ENServiceKit

/// `publish <what>`: publishes one part of the tree at once, outside a run.
struct PublishTool: ServiceTool {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "publish availability: sign and publish the NHS availability documents now, alone (NHS_ENABLED)",
        subcommands: [Availability.self]
    )

    /// `publish` without what to publish: the usage, and 2.
    func run(environment: [String: String]) async -> Int32 {
        Self.fail(Self.helpMessage())
        return 2
    }

    /// `publish availability [--setting value …]`.
    struct Availability: ServiceTool {
        static let configuration = CommandConfiguration(
            abstract: "Sign and publish the NHS availability documents now (NHS_ENABLED).",
            discussion:
                "Reads the service's settings from the environment; a setting given as a flag (--cdn-directory <dir>) wins."
        )

        @Argument(parsing: .allUnrecognized, help: "The service's settings as flags.")
        var settings: [String] = []

        func run(environment: [String: String]) async -> Int32 {
            await Distribution.publishAvailability(settings: self.settings, environment: environment)
        }
    }
}
