// The administrator's command line: officers and the audit trail, straight on the portal database.

import ENCrypto
import ENPersistence
import ENServiceKit
import Foundation
import HummingbirdBcrypt
import Logging
import PostgresNIO

/// `user add NAME ROLES` (the password is read from standard input, the `otpauth://` URI printed), `user disable
/// NAME`, `user reset-totp NAME` (prints the new URI), `user list`, `audit --since TIME`. Uses `DATABASE_URL` and
/// applies pending migrations first. Output for scripts goes to standard output, everything else to standard error.
enum PortalCommands {
    static let usage = """
        usage: portal-service user add NAME ROLE[,ROLE]   (password on standard input; prints the otpauth:// URI)
               portal-service user disable NAME
               portal-service user reset-totp NAME         (prints the new otpauth:// URI)
               portal-service user list
               portal-service audit --since 2026-11-22T00:00:00Z
        roles: \(PortalRole.allCases.map(\.rawValue).joined(separator: ", "))
        """

    static func run(_ arguments: [String], environment: [String: String]) async -> Int32 {
        let settings = SettingsReader(arguments: ["portal-service"], environment: environment)
        let database = DatabaseConfiguration(settings: settings)
        let cost = PortalPolicy(settings: settings).bcryptCost
        // Only the commands that write a TOTP secret need the key that seals it.
        let writesSecret =
            arguments.count >= 2 && arguments[0] == "user" && ["add", "reset-totp"].contains(arguments[1])
        let box = writesSecret ? PortalConfiguration.totpKeys(settings: settings).map(TOTPSecretBox.init(keys:)) : nil
        do {
            try settings.finish()
        } catch {
            self.fail("\(error.description)")
            return 2
        }
        let logger = Logger(label: "portal-service", factory: { _ in SwiftLogNoOpLogHandler() })
        do {
            return try await MigrationRunner.withMigratedClient(
                groups: [PortalMigrations.group],
                database: database,
                logger: logger
            ) { client in
                try await self.execute(
                    arguments,
                    repository: PostgresPortalRepository(client: client, logger: logger),
                    box: box,
                    cost: cost
                )
            }
        } catch {
            self.fail("failed: \(String(describing: type(of: error)))")
            return 1
        }
    }

    private static func execute(
        _ arguments: [String],
        repository store: any PortalRepository,
        box: TOTPSecretBox?,
        cost: Int
    ) async throws -> Int32 {
        let now = Date()
        switch arguments {
        case let arguments where arguments.count == 4 && arguments[0] == "user" && arguments[1] == "add":
            let username = arguments[2].lowercased()
            let roles = arguments[3].split(separator: ",").map(String.init)
            guard username.range(of: "^[a-z0-9][a-z0-9._-]{1,63}$", options: .regularExpression) != nil else {
                self.fail("the name must be 2–64 characters of a-z, 0-9, '.', '_' and '-'")
                return 2
            }
            guard !roles.isEmpty, roles.allSatisfy({ PortalRole(rawValue: $0) != nil }) else {
                self.fail("roles must be among \(PortalRole.allCases.map(\.rawValue).joined(separator: ", "))")
                return 2
            }
            let password = readLine(strippingNewline: true) ?? ""
            guard PasswordRules.acceptable(password, username: username) else {
                self.fail("the password (standard input) must have 12 to 128 characters and differ from the name")
                return 2
            }
            let totp = TOTP.random()
            guard let box else { throw PortalCommandError.noTOTPKey }
            guard
                try await store.addOfficer(
                    NewOfficer(
                        username: username,
                        passwordHash: Bcrypt.hash(password, cost: UInt8(cost)),
                        roles: roles,
                        totpSecret: try box.seal(totp.secret, username: username)
                    ),
                    now: now
                )
            else {
                self.fail("an officer named \(username) exists already")
                return 1
            }
            try await store.audit(
                AuditEvent(
                    at: now,
                    username: username,
                    action: "user_added",
                    details: "roles=\(roles.joined(separator: ","))"
                )
            )
            print(totp.uri(issuer: "CWA Portal", account: username))
            return 0
        case let arguments where arguments.count == 3 && arguments[0] == "user" && arguments[1] == "disable":
            guard try await store.disable(username: arguments[2].lowercased()) else {
                self.fail("no officer named \(arguments[2])")
                return 1
            }
            try await store.audit(
                AuditEvent(at: now, username: arguments[2].lowercased(), action: "user_disabled", details: "")
            )
            return 0
        case let arguments where arguments.count == 3 && arguments[0] == "user" && arguments[1] == "reset-totp":
            let totp = TOTP.random()
            let username = arguments[2].lowercased()
            guard let box else { throw PortalCommandError.noTOTPKey }
            guard try await store.resetTOTP(username: username, secret: try box.seal(totp.secret, username: username))
            else {
                self.fail("no officer named \(arguments[2])")
                return 1
            }
            try await store.audit(
                AuditEvent(at: now, username: arguments[2].lowercased(), action: "totp_reset", details: "")
            )
            print(totp.uri(issuer: "CWA Portal", account: arguments[2].lowercased()))
            return 0
        case ["user", "list"]:
            for officer in try await store.allOfficers() {
                let state =
                    officer.disabled
                    ? "disabled" : (officer.lockedUntil.map { $0 > now } ?? false) ? "locked" : "active"
                print("\(officer.username)\t\(officer.roles.joined(separator: ","))\t\(state)")
            }
            return 0
        case let arguments where arguments.count == 3 && arguments[0] == "audit" && arguments[1] == "--since":
            guard let since = ISO8601DateFormatter().date(from: arguments[2]) else {
                self.fail("--since takes an ISO 8601 time such as 2026-11-22T00:00:00Z")
                return 2
            }
            let formatter = ISO8601DateFormatter()
            for event in try await store.auditEvents(since: since) {
                let fields = [event.username, event.action, event.details].map(Self.printable)
                print(([formatter.string(from: event.at)] + fields).joined(separator: "\t"))
            }
            return 0
        default:
            self.fail(self.usage)
            return 2
        }
    }

    /// `text` with every control, format or separator character (escape sequences, tabs, bidi overrides) written as
    /// `\u{…}`, so an audit line cannot move the cursor, forge columns or hide text on the administrator's terminal.
    static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
                out += "\\u{\(String(scalar.value, radix: 16))}"
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func fail(_ message: String) {
        FileHandle.standardError.write(Data("portal-service: \(message)\n".utf8))
    }
}

/// A command that writes a TOTP secret ran without the key that seals it (settings problems stop it before this).
private enum PortalCommandError: Error {
    case noTOTPKey
}
