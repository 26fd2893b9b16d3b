// The administrator's command line: officers and the audit trail, straight on the portal database.

import ArgumentParser
import ENCrypto
import ENPersistence
import ENServiceKit
import Foundation
import HummingbirdBcrypt
import Logging
import PostgresNIO

/// `user add NAME ROLES` (the password is read from standard input, the `otpauth://` URI printed), `user disable
/// NAME`, `user reset-totp NAME` (prints the new URI), `user list`, `audit --since TIME`, read by
/// swift-argument-parser (`user --help`, `user add --help`). Uses `DATABASE_URL` and applies pending migrations first.
/// Output for scripts goes to standard output, everything else to standard error.
enum PortalCommands {
    /// Runs `arguments`, the tool's name (`user` or `audit`) first; returns the exit code.
    static func run(_ arguments: [String], environment: [String: String]) async -> Int32 {
        let rest = Array(arguments.dropFirst())
        let line: ToolLine<any PortalLine> =
            arguments.first == "audit"
            ? AuditTrail.parseLine(rest, as: (any PortalLine).self)
            : UserGroup.parseLine(rest, as: (any PortalLine).self)
        let action: any PortalLine
        switch line {
        case .exit(let code): return code
        case .parsed(let parsed): action = parsed
        }
        let settings = SettingsReader(arguments: ["portal-service"], environment: environment)
        let database = DatabaseConfiguration(settings: settings)
        let cost = PortalPolicy(settings: settings).bcryptCost
        // Only the commands that write a TOTP secret need the key that seals it.
        let box =
            action.writesTOTPSecret
            ? PortalConfiguration.totpKeys(settings: settings).map(TOTPSecretBox.init(keys:)) : nil
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
                try await action.perform(
                    PortalCommandContext(
                        store: PostgresPortalRepository(client: client, logger: logger),
                        box: box,
                        cost: cost,
                        now: Date()
                    )
                )
            }
        } catch {
            self.fail("failed: \(String(describing: type(of: error)))")
            return 1
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

    fileprivate static func fail(_ message: String) {
        FileHandle.standardError.write(Data("portal-service: \(message)\n".utf8))
    }
}

/// What a command works on: the migrated database, the key that seals TOTP secrets (for the commands that write one),
/// the bcrypt cost of passwords, the time it runs at.
private struct PortalCommandContext {
    var store: any PortalRepository
    var box: TOTPSecretBox?
    var cost: Int
    var now: Date

    func sealingBox() throws -> TOTPSecretBox {
        guard let box else { throw PortalCommandError.noTOTPKey }
        return box
    }
}

/// One of the commands `user …` and `audit` run.
private protocol PortalLine: ParsableCommand, Sendable {
    /// Whether it writes a TOTP secret (and so needs `TOTP_KEY_FILE`).
    var writesTOTPSecret: Bool { get }
    func perform(_ context: PortalCommandContext) async throws -> Int32
}

extension PortalLine {
    var writesTOTPSecret: Bool { false }
}

private struct UserGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "add, disable, reset the TOTP of or list officers, straight on the database",
        subcommands: [AddOfficer.self, DisableOfficer.self, ResetTOTP.self, ListOfficers.self]
    )
}

/// An officer's name on the command line: lower-cased, 2–64 characters of a-z, 0-9, '.', '_' and '-'.
private func officerName(_ argument: String) throws -> String {
    let name = argument.lowercased()
    guard NewOfficer.isValidUsername(name) else {
        throw ValidationError("the name must be 2–64 characters of a-z, 0-9, '.', '_' and '-'")
    }
    return name
}

private struct AddOfficer: PortalLine {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "add an officer; the password is read from standard input, the otpauth:// URI printed"
    )

    @Argument(help: "The officer's name.", transform: officerName)
    var name: String

    @Argument(help: "Roles, comma-separated: \(PortalRole.allCases.map(\.rawValue).joined(separator: ", ")).")
    var roles: String

    var writesTOTPSecret: Bool { true }

    func validate() throws {
        guard !self.roleList.isEmpty, self.roleList.allSatisfy({ PortalRole(rawValue: $0) != nil }) else {
            throw ValidationError("roles must be among \(PortalRole.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    private var roleList: [String] { self.roles.split(separator: ",").map(String.init) }

    func perform(_ context: PortalCommandContext) async throws -> Int32 {
        let roles = self.roleList
        let password = readLine(strippingNewline: true) ?? ""
        guard PasswordRules.acceptable(password, username: self.name) else {
            PortalCommands.fail(
                "the password (standard input) must have 12 to 128 characters, no control characters, and differ from the name"
            )
            return 2
        }
        let totp = TOTP.random()
        let box = try context.sealingBox()
        guard
            try await context.store.addOfficer(
                NewOfficer(
                    username: self.name,
                    passwordHash: Bcrypt.hash(password, cost: UInt8(context.cost)),
                    roles: roles,
                    totpSecret: try box.seal(totp.secret, username: self.name)
                ),
                now: context.now
            )
        else {
            PortalCommands.fail("an officer named \(self.name) exists already")
            return 1
        }
        try await context.store.audit(
            AuditEvent(
                at: context.now,
                username: self.name,
                action: "user_added",
                details: "roles=\(roles.joined(separator: ","))"
            )
        )
        print(totp.uri(issuer: "CWA Portal", account: self.name))
        return 0
    }
}

private struct DisableOfficer: PortalLine {
    static let configuration = CommandConfiguration(commandName: "disable", abstract: "disable an officer")

    @Argument(help: "The officer's name.", transform: officerName)
    var name: String

    func perform(_ context: PortalCommandContext) async throws -> Int32 {
        guard try await context.store.disable(username: self.name) else {
            PortalCommands.fail("no officer named \(self.name)")
            return 1
        }
        try await context.store.audit(
            AuditEvent(at: context.now, username: self.name, action: "user_disabled", details: "")
        )
        return 0
    }
}

private struct ResetTOTP: PortalLine {
    static let configuration = CommandConfiguration(
        commandName: "reset-totp",
        abstract: "give an officer a new TOTP secret and print its otpauth:// URI"
    )

    @Argument(help: "The officer's name.", transform: officerName)
    var name: String

    var writesTOTPSecret: Bool { true }

    func perform(_ context: PortalCommandContext) async throws -> Int32 {
        let totp = TOTP.random()
        let box = try context.sealingBox()
        guard
            try await context.store.resetTOTP(
                username: self.name,
                secret: try box.seal(totp.secret, username: self.name)
            )
        else {
            PortalCommands.fail("no officer named \(self.name)")
            return 1
        }
        try await context.store.audit(
            AuditEvent(at: context.now, username: self.name, action: "totp_reset", details: "")
        )
        print(totp.uri(issuer: "CWA Portal", account: self.name))
        return 0
    }
}

private struct ListOfficers: PortalLine {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "list the officers: name, roles, state (active, locked or disabled)"
    )

    func perform(_ context: PortalCommandContext) async throws -> Int32 {
        for officer in try await context.store.allOfficers() {
            let locked = officer.lockedUntil.map { $0 > context.now } ?? false
            let state = officer.disabled ? "disabled" : locked ? "locked" : "active"
            print("\(officer.username)\t\(officer.roles.joined(separator: ","))\t\(state)")
        }
        return 0
    }
}

private struct AuditTrail: PortalLine {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "print the audit trail since a time: time, officer, action, details (tab-separated)"
    )

    @Option(
        help: "An ISO 8601 time such as 2026-11-22T00:00:00Z.",
        transform: { text in
            guard let date = ISO8601DateFormatter().date(from: text) else {
                throw ValidationError("--since takes an ISO 8601 time such as 2026-11-22T00:00:00Z")
            }
            return date
        }
    )
    var since: Date

    func perform(_ context: PortalCommandContext) async throws -> Int32 {
        let formatter = ISO8601DateFormatter()
        for event in try await context.store.auditEvents(since: self.since) {
            let fields = [event.username, event.action, event.details].map(PortalCommands.printable)
            print(([formatter.string(from: event.at)] + fields).joined(separator: "\t"))
        }
        return 0
    }
}

/// A command that writes a TOTP secret ran without the key that seals it (settings problems stop it before this).
private enum PortalCommandError: Error {
    case noTOTPKey
}
