// The operator's command line: countries and their certificates, straight on the gateway's database.

import ENCrypto
import ENFederation
import ENPersistence
import ENServiceKit
import Foundation
import Logging
import SwiftASN1
import X509

/// `country add CODE --auth-cert PEM [--signing-cert PEM] [--callback-cert PEM] [--trust-anchor-cert PEM
/// --trust-anchor-key PEM]`, `country list`, `country revoke CODE [--type AUTHENTICATION|SIGNING|CALLBACK]`. Uses
/// `DATABASE_URL` and applies pending migrations first. A certificate's subject must name the country (`C`). With the
/// trust anchor's certificate and key, each row is stored with the anchor's signature (cwa-satellites §5.1); `list`
/// shows whether each row passes the integrity check the gateway applies (`EFGS_TRUST_ANCHOR_FILE`).
enum CountryCommands {
    static let usage = """
        usage: efgs-gateway country add CODE --auth-cert FILE [--signing-cert FILE] [--callback-cert FILE]
                                            [--trust-anchor-cert FILE --trust-anchor-key FILE]
               efgs-gateway country list
               efgs-gateway country revoke CODE [--type AUTHENTICATION|SIGNING|CALLBACK]
        """

    static func run(_ arguments: [String], environment: [String: String]) async -> Int32 {
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
        switch self.plan(Array(arguments.dropFirst())) {
        case .success(let parsed): plan = parsed
        case .failure(let problem):
            self.fail("\(problem.message)\n\(self.usage)")
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

    static func plan(_ arguments: [String]) -> Result<Plan, Problem> {
        guard let verb = arguments.first else { return .failure(Problem(message: "a subcommand is required")) }
        switch verb {
        case "list" where arguments.count == 1: return .success(.list)
        case "add":
            guard arguments.count >= 4, arguments.count % 2 == 0 else {
                return .failure(Problem(message: "add needs CODE and options"))
            }
            let code = arguments[1].uppercased()
            var certificates: [CountryCertificate] = []
            var anchorFiles: (certificate: String?, key: String?) = (nil, nil)
            var index = 2
            while index + 1 < arguments.count {
                let kind: CountryCertificate.Kind
                switch arguments[index] {
                case "--auth-cert": kind = .authentication
                case "--signing-cert": kind = .signing
                case "--callback-cert": kind = .callback
                case "--trust-anchor-cert":
                    anchorFiles.certificate = arguments[index + 1]
                    index += 2
                    continue
                case "--trust-anchor-key":
                    anchorFiles.key = arguments[index + 1]
                    index += 2
                    continue
                default: return .failure(Problem(message: "unknown option \(arguments[index])"))
                }
                let file = arguments[index + 1]
                guard let pem = try? String(contentsOfFile: file, encoding: .utf8),
                    let certificate = try? Certificate(pemEncoded: pem), let der = try? certificate.derEncoded()
                else { return .failure(Problem(message: "\(file) is not a PEM certificate")) }
                if kind != .callback, certificate.countryCode != code {
                    return .failure(Problem(message: "\(file): the subject's C is not \(code)"))
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
                index += 2
            }
            guard certificates.contains(where: { $0.kind == .authentication }) else {
                return .failure(Problem(message: "--auth-cert is required"))
            }
            switch anchorFiles {
            case (nil, nil): break
            case (let certificateFile?, let keyFile?):
                guard let certificatePEM = try? String(contentsOfFile: certificateFile, encoding: .utf8),
                    let keyPEM = try? String(contentsOfFile: keyFile, encoding: .utf8),
                    let signer = try? BatchSigner(certificatePEM: certificatePEM, privateKeyPEM: keyPEM)
                else {
                    return .failure(
                        Problem(message: "the trust anchor's certificate and key are not a readable PEM pair")
                    )
                }
                for index in certificates.indices {
                    guard let signature = try? signer.signature(ofCertificatePEM: certificates[index].pem) else {
                        return .failure(Problem(message: "could not sign a certificate with the trust anchor"))
                    }
                    certificates[index].signature = signature
                }
            default: return .failure(Problem(message: "--trust-anchor-cert and --trust-anchor-key go together"))
            }
            return .success(.add(certificates))
        case "revoke" where arguments.count == 2 || arguments.count == 4:
            var kind: CountryCertificate.Kind?
            if arguments.count == 4 {
                guard arguments[2] == "--type",
                    let parsed = CountryCertificate.Kind(rawValue: arguments[3].uppercased())
                else {
                    return .failure(Problem(message: "--type must be AUTHENTICATION, SIGNING or CALLBACK"))
                }
                kind = parsed
            }
            return .success(.revoke(arguments[1].uppercased(), kind))
        default: return .failure(Problem(message: "unknown subcommand or arguments"))
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
