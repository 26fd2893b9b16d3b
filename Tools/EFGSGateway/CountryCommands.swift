// The operator's command line: countries and their certificates, straight on the gateway's database.

import ArgumentParser
import ENCrypto
import ENFederation
import ENPersistence
import ENServiceKit
import Foundation
import Logging
import SwiftASN1
import X509

/// `country add CODE --auth-cert PEM [--signing-cert PEM] [--callback-cert PEM] [--trust-anchor-cert PEM
/// --trust-anchor-key PEM]`, `country list`, `country revoke CODE [--type AUTHENTICATION|SIGNING|CALLBACK]`, read by
/// swift-argument-parser (`country --help`, `country add --help`). Uses
/// `DATABASE_URL` and applies pending migrations first. A certificate's subject must name the country (`C`). With the
/// trust anchor's certificate and key, each row is stored with the anchor's signature (cwa-satellites §5.1); `list`
/// shows whether each row passes the integrity check the gateway applies (`EFGS_TRUST_ANCHOR_FILE`).
enum CountryCommands {
    static func run(_ arguments: [String], environment: [String: String]) async -> Int32 {
        let line: any CountryLine
        switch CountryGroup.parseLine(Array(arguments.dropFirst()), as: (any CountryLine).self) {
        case .exit(let code): return code
        case .parsed(let parsed): line = parsed
        }
        let settings = SettingsReader(arguments: ["efgs-gateway"], environment: environment)
        let database = DatabaseConfiguration(settings: settings)
        let integrity = CertificateIntegrity(trustAnchor: GatewayConfiguration.trustAnchor(settings: settings))
        do {
            try settings.finish()
        } catch {
            self.fail(error.description)
            return 2
        }
        let plan: Plan
        switch line.plan() {
        case .success(let parsed): plan = parsed
        case .failure(let problem):
            self.fail("\(problem.message)\n\(CountryGroup.helpMessage())")
            return 2
        }
        let logger = Logger(label: "efgs-gateway", factory: { _ in SwiftLogNoOpLogHandler() })
        do {
            return try await MigrationRunner.withMigratedClient(
                groups: [GatewayMigrations.group],
                database: database,
                logger: logger
            ) { client in
                // A one-off command waits for its connection rather than give up after a request's lease timeout.
                let store = GatewayStore(
                    client: client,
                    logger: logger,
                    integrity: integrity,
                    leaseTimeout: DatabasePool.unhurriedLeaseTimeout
                )
                return try await self.execute(plan, store: store)
            }
        } catch {
            self.fail("failed: \(String(describing: type(of: error)))")
            return 1
        }
    }

    enum Plan {
        case add([CountryCertificate])
        case list
        case revoke(String, CountryCertificate.Kind?)
    }

    struct Problem: Error { var message: String }

    /// What `arguments` (after `country`) ask for, with the certificates read and, with a trust anchor, signed.
    static func plan(_ arguments: [String]) -> Result<Plan, Problem> {
        do {
            guard let line = try CountryGroup.parseAsRoot(arguments) as? any CountryLine else {
                return .failure(Problem(message: "a subcommand is required"))
            }
            return line.plan()
        } catch {
            return .failure(Problem(message: CountryGroup.message(for: error)))
        }
    }

    private static func execute(_ plan: Plan, store: GatewayStore) async throws -> Int32 {
        switch plan {
        case .add(let certificates):
            // A row the gateway would not believe is refused here rather than stored and ignored.
            for certificate in certificates where !(await store.integrity.holds(for: certificate)) {
                self.fail(
                    "the \(certificate.kind.rawValue) row fails the integrity check: EFGS_TRUST_ANCHOR_FILE is set, so "
                        + "--trust-anchor-cert and --trust-anchor-key of that anchor are needed"
                )
                return 2
            }
            for certificate in certificates { try await store.register(certificate) }
            for certificate in certificates {
                print("\(certificate.country) \(certificate.kind.rawValue) \(certificate.thumbprint)")
            }
        case .list:
            for certificate in try await store.allCertificates() {
                let intact = await store.integrity.holds(for: certificate)
                print(
                    "\(certificate.country) \(certificate.kind.rawValue) \(certificate.thumbprint)\(certificate.revoked ? " revoked" : "")\(intact ? "" : " fails-integrity-check")"
                )
            }
        case .revoke(let country, let kind):
            print("revoked \(try await store.revoke(country: country, kind: kind))")
        }
        return 0
    }

    private static func fail(_ message: String) {
        FileHandle.standardError.write(Data("efgs-gateway: \(message)\n".utf8))
    }
}

/// One of `country`'s subcommands: what it asks the database for.
private protocol CountryLine: ParsableCommand, Sendable {
    func plan() -> Result<CountryCommands.Plan, CountryCommands.Problem>
}

private struct CountryGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "country",
        abstract: "add, list or revoke countries' certificates, straight on the database",
        discussion:
            "Uses DATABASE_URL (and EFGS_TRUST_ANCHOR_FILE for the integrity check); applies pending migrations first.",
        subcommands: [AddCountry.self, ListCountries.self, RevokeCountry.self]
    )
}

private struct AddCountry: CountryLine {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "register a country's certificates; each subject but the callback's must name the country (C)"
    )

    @Argument(help: "The country code, e.g. DE.")
    var code: String

    @Option(help: "An authentication (TLS client) certificate, PEM; at least one, each its own row.")
    var authCert: [String] = []

    @Option(help: "A batch-signing certificate, PEM; each its own row.")
    var signingCert: [String] = []

    @Option(help: "A callback server's certificate, PEM; each its own row.")
    var callbackCert: [String] = []

    @Option(help: "The trust anchor's certificate, PEM: each row is stored with the anchor's signature.")
    var trustAnchorCert: String?

    @Option(help: "The trust anchor's private key, PEM.")
    var trustAnchorKey: String?

    func validate() throws {
        guard !self.authCert.isEmpty else { throw ValidationError("--auth-cert is required") }
        guard (self.trustAnchorCert == nil) == (self.trustAnchorKey == nil) else {
            throw ValidationError("--trust-anchor-cert and --trust-anchor-key go together")
        }
    }

    func plan() -> Result<CountryCommands.Plan, CountryCommands.Problem> {
        let code = self.code.uppercased()
        var certificates: [CountryCertificate] = []
        let files =
            self.authCert.map { (CountryCertificate.Kind.authentication, $0) }
            + self.signingCert.map { (.signing, $0) } + self.callbackCert.map { (.callback, $0) }
        for (kind, file) in files {
            guard let pem = try? String(contentsOfFile: file, encoding: .utf8),
                let certificate = try? Certificate(pemEncoded: pem), let der = try? certificate.derEncoded()
            else { return .failure(.init(message: "\(file) is not a PEM certificate")) }
            if kind != .callback, certificate.countryCode != code {
                return .failure(.init(message: "\(file): the subject's C is not \(code)"))
            }
            certificates.append(
                CountryCertificate(
                    thumbprint: CertificateThumbprint(derEncodedCertificate: der).hex,
                    kind: kind,
                    country: code,
                    revoked: false,
                    pem: pem
                )
            )
        }
        guard let certificateFile = self.trustAnchorCert, let keyFile = self.trustAnchorKey else {
            return .success(.add(certificates))
        }
        guard let certificatePEM = try? String(contentsOfFile: certificateFile, encoding: .utf8),
            let keyPEM = try? String(contentsOfFile: keyFile, encoding: .utf8),
            let signer = try? BatchSigner(certificatePEM: certificatePEM, privateKeyPEM: keyPEM)
        else {
            return .failure(.init(message: "the trust anchor's certificate and key are not a readable PEM pair"))
        }
        for index in certificates.indices {
            guard let signature = try? signer.signature(ofCertificatePEM: certificates[index].pem) else {
                return .failure(.init(message: "could not sign a certificate with the trust anchor"))
            }
            certificates[index].signature = signature
        }
        return .success(.add(certificates))
    }
}

private struct ListCountries: CountryLine {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "list every certificate, revoked ones and rows failing the integrity check marked"
    )

    func plan() -> Result<CountryCommands.Plan, CountryCommands.Problem> { .success(.list) }
}

extension CountryCertificate.Kind: ExpressibleByArgument {
    init?(argument: String) { self.init(rawValue: argument.uppercased()) }
}

private struct RevokeCountry: CountryLine {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "revoke a country's certificates, or those of one --type"
    )

    @Argument(help: "The country code.")
    var code: String

    @Option(help: "AUTHENTICATION, SIGNING or CALLBACK; every kind when left out.")
    var type: CountryCertificate.Kind?

    func plan() -> Result<CountryCommands.Plan, CountryCommands.Problem> {
        .success(.revoke(self.code.uppercased(), self.type))
    }
}
