// `<service> api-key add|revoke|list`: the NHS API keys of a service, straight on its database.

import ArgumentParser
import ENCrypto
package import ENPersistence
package import ENServiceKit
import Foundation
import Logging

/// The `api-key` command of every service that serves NHS routes. Uses `DATABASE_URL` and applies the service's
/// pending migrations first. The new key's bearer value goes to standard output, everything else to standard error.
package enum NHSAPIKeyCommand {
    /// The command for `Entry`, on the database of `groups`.
    package static func command<Entry: ServiceEntrypoint>(groups: [MigrationGroup]) -> ServiceCommand<Entry> {
        let service = Entry.serviceName
        return .tool("api-key", summary: APIKeyGroup.configuration.abstract) { arguments, environment in
            await self.run(Array(arguments.dropFirst()), environment: environment, groups: groups, service: service)
        }
    }

    /// Runs the command on `arguments` (after `api-key`); returns the exit code.
    package static func run(
        _ arguments: [String],
        environment: [String: String],
        groups: [MigrationGroup],
        service: String
    ) async -> Int32 {
        let action: any APIKeyAction
        switch APIKeyGroup.parseLine(arguments, as: (any APIKeyAction).self) {
        case .exit(let code): return code
        case .parsed(let parsed): action = parsed
        }
        let settings = SettingsReader(arguments: [service], environment: environment)
        let database = DatabaseConfiguration(settings: settings)
        do {
            try settings.finish()
        } catch {
            self.fail("\(error.description)")
            return 2
        }
        let logger = Logger(label: service, factory: { _ in SwiftLogNoOpLogHandler() })
        do {
            return try await MigrationRunner.withMigratedClient(groups: groups, database: database, logger: logger) {
                client in
                let store = PostgresNHSAPIKeyStore(
                    client: client,
                    logger: logger,
                    leaseTimeout: DatabasePool.unhurriedLeaseTimeout
                )
                return try await action.perform(on: store)
            }
        } catch {
            self.fail("failed: \(String(describing: type(of: error)))")
            return 1
        }
    }

    fileprivate static func fail(_ message: String) {
        FileHandle.standardError.write(Data("\(message)\n".utf8))
    }
}

/// One of `api-key`'s subcommands, run on the migrated database.
private protocol APIKeyAction: ParsableCommand, Sendable {
    func perform(on store: PostgresNHSAPIKeyStore) async throws -> Int32
}

private struct APIKeyGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api-key",
        abstract: "add, revoke or list the keys of the NHS API family",
        discussion: "Uses DATABASE_URL and applies the service's pending migrations first.",
        subcommands: [AddKey.self, RevokeKey.self, ListKeys.self]
    )
}

extension NHSAPIName: ExpressibleByArgument {}

/// The key name rule of `NHSAPIKeyCredential`, as a validation error of the command line.
private func validateKeyName(_ name: String) throws {
    guard NHSAPIKeyCredential.isValidName(name) else {
        throw ValidationError("NAME takes 6 to 50 of A-Z a-z 0-9 _ -")
    }
}

private struct AddKey: APIKeyAction {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "add a key and print the value that follows \"Authorization: Bearer \""
    )

    @Argument(help: "The API: \(NHSAPIName.allCases.map(\.rawValue).joined(separator: ", ")).")
    var api: NHSAPIName

    @Argument(help: "The key's name: 6 to 50 of A-Z a-z 0-9 _ -.")
    var name: String

    @Flag(help: "Take the secret from standard input, 32 to 128 random bytes (to install one key in several services).")
    var secretStdin = false

    func validate() throws { try validateKeyName(self.name) }

    func perform(on store: PostgresNHSAPIKeyStore) async throws -> Int32 {
        let credential: NHSAPIKeyCredential
        if self.secretStdin {
            let secret = (readLine(strippingNewline: true) ?? "").trimmingCharacters(in: .whitespaces)
            // At least 32 bytes: with `openssl rand -hex 16` or more, 128 random bits, which the stored SHA-256
            // needs to stay unsearchable.
            guard (32...128).contains(secret.utf8.count), SecretText.isClean(secret) else {
                NHSAPIKeyCommand.fail("the secret (standard input) must have 32 to 128 bytes and no control characters")
                return 2
            }
            credential = NHSAPIKeyCredential(keyName: self.name, secret: secret)
        } else {
            credential = .generate(keyName: self.name)
        }
        try await store.add(credential, api: self.api, now: Date())
        print(String(credential.authorization.dropFirst("Bearer ".count)))
        return 0
    }
}

private struct RevokeKey: APIKeyAction {
    static let configuration = CommandConfiguration(commandName: "revoke", abstract: "revoke an active key")

    @Argument(help: "The API: \(NHSAPIName.allCases.map(\.rawValue).joined(separator: ", ")).")
    var api: NHSAPIName

    @Argument(help: "The key's name.")
    var name: String

    func validate() throws { try validateKeyName(self.name) }

    func perform(on store: PostgresNHSAPIKeyStore) async throws -> Int32 {
        guard try await store.revoke(api: self.api, keyName: self.name, now: Date()) else {
            NHSAPIKeyCommand.fail("no active key \(self.name) of \(self.api.rawValue)")
            return 1
        }
        return 0
    }
}

private struct ListKeys: APIKeyAction {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "list every key: API, name, creation time, state"
    )

    func perform(on store: PostgresNHSAPIKeyStore) async throws -> Int32 {
        let formatter = ISO8601DateFormatter()
        for key in try await store.all() {
            let state = key.revoked.map { "revoked \(formatter.string(from: $0))" } ?? "active"
            print("\(key.api)\t\(key.name)\t\(formatter.string(from: key.created))\t\(state)")
        }
        return 0
    }
}
