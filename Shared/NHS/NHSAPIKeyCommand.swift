// `<service> api-key add|revoke|list`: the NHS API keys of a service, straight on its database.

package import ENPersistence
package import ENServiceKit
import Foundation
import Logging

/// The `api-key` command of every service that serves NHS routes. Uses `DATABASE_URL` and applies the service's
/// pending migrations first. The new key's bearer value goes to standard output, everything else to standard error.
package enum NHSAPIKeyCommand {
    static func usage(_ service: String) -> String {
        """
        usage: \(service) api-key add API NAME [--secret-stdin]   (prints the value after "Authorization: Bearer ")
               \(service) api-key revoke API NAME
               \(service) api-key list
        APIs: \(NHSAPIName.allCases.map(\.rawValue).joined(separator: ", ")); NAME: 6 to 50 of A-Z a-z 0-9 _ -
        --secret-stdin takes the secret from standard input (to install one key in several services).
        """
    }

    /// The command for `Entry`, on the database of `groups`.
    package static func command<Entry: ServiceEntrypoint>(groups: [MigrationGroup]) -> ServiceCommand<Entry> {
        let service = Entry.serviceName
        return .tool("api-key", summary: "add, revoke or list the keys of the NHS API family") {
            arguments,
            environment in
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
        let settings = SettingsReader(arguments: [service], environment: environment)
        let database = DatabaseConfiguration(settings: settings)
        do {
            try settings.finish()
        } catch {
            self.fail("\(error.description)")
            return 2
        }
        let parsed: (action: String, api: NHSAPIName?, name: String?, fromStdin: Bool)
        switch arguments {
        case ["list"]: parsed = ("list", nil, nil, false)
        case let arguments where (3...4).contains(arguments.count) && ["add", "revoke"].contains(arguments[0]):
            guard let api = NHSAPIName(rawValue: arguments[1]), NHSAPIKeyCredential.isValidName(arguments[2]) else {
                self.fail(self.usage(service))
                return 2
            }
            let stdin = arguments.count == 4
            guard !stdin || (arguments[3] == "--secret-stdin" && arguments[0] == "add") else {
                self.fail(self.usage(service))
                return 2
            }
            parsed = (arguments[0], api, arguments[2], stdin)
        default:
            self.fail(self.usage(service))
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
                switch (parsed.action, parsed.api, parsed.name) {
                case ("add", let api?, let name?):
                    let credential: NHSAPIKeyCredential
                    if parsed.fromStdin {
                        let secret = (readLine(strippingNewline: true) ?? "").trimmingCharacters(in: .whitespaces)
                        guard secret.utf8.count >= 16, secret.utf8.count <= 72 else {
                            self.fail("the secret (standard input) must have 16 to 72 bytes")
                            return 2
                        }
                        credential = NHSAPIKeyCredential(keyName: name, secret: secret)
                    } else {
                        credential = .generate(keyName: name)
                    }
                    try await store.add(credential, api: api, now: Date())
                    print(String(credential.authorization.dropFirst("Bearer ".count)))
                    return 0
                case ("revoke", let api?, let name?):
                    guard try await store.revoke(api: api, keyName: name, now: Date()) else {
                        self.fail("no active key \(name) of \(api.rawValue)")
                        return 1
                    }
                    return 0
                default:
                    let formatter = ISO8601DateFormatter()
                    for key in try await store.all() {
                        let state = key.revoked.map { "revoked \(formatter.string(from: $0))" } ?? "active"
                        print("\(key.api)\t\(key.name)\t\(formatter.string(from: key.created))\t\(state)")
                    }
                    return 0
                }
            }
        } catch {
            self.fail("failed: \(String(describing: type(of: error)))")
            return 1
        }
    }

    private static func fail(_ message: String) {
        FileHandle.standardError.write(Data("\(message)\n".utf8))
    }
}
