// `cwa lab upload`: a lab posting a result through the gateway's mutual TLS.

import ArgumentParser
import ENCrypto
import ENModels
import Foundation

struct LabCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lab",
        abstract: "A connected lab.",
        subcommands: [Upload.self]
    )
}

/// The lab's server and certificate.
struct LabOptions: ParsableArguments {
    @Option(name: .customLong("lab-url"), help: "The gateway's lab server (env CWA_LAB_URL).")
    var labURL: String = environment("CWA_LAB_URL", "https://127.0.0.1:8444")!
    @Option(name: .customLong("cert"), help: "The lab's client certificate, PEM (env CWA_LAB_CERT).")
    var certOption: String?
    @Option(name: .customLong("key"), help: "The lab's private key, PEM (env CWA_LAB_KEY).")
    var keyOption: String?
    @Flag(name: .customLong("no-cert"), help: "Connect without a client certificate (the gateway must refuse).")
    var noCertificate = false
    @Option(
        name: .customLong("lab-id"),
        help: "The lab's id, the name the service's allowlist gives its certificate (env CWA_LAB_ID)."
    )
    var labIDOption: String?

    var cert: String? { self.certOption ?? environment("CWA_LAB_CERT") }
    var key: String? { self.keyOption ?? environment("CWA_LAB_KEY") }
    var lab: String { self.labURL.trimmingSuffix("/") }
    var labID: String { self.labIDOption ?? environment("CWA_LAB_ID", "lab-1")! }

    func client(gateway: GatewayOptions) throws -> GatewayClient {
        if self.noCertificate { return try gateway.client() }
        guard let cert = self.cert, let key = self.key else {
            throw ValidationError("--cert and --key (or CWA_LAB_CERT, CWA_LAB_KEY) are required")
        }
        return try gateway.client(certificateFile: cert, keyFile: key)
    }
}

/// A result as labs name it.
enum LabResult: String, ExpressibleByArgument, CaseIterable {
    case pending, negative, positive, invalid

    var outcome: TestOutcome {
        switch self {
        case .pending: .pending
        case .negative: .negative
        case .positive: .positive
        case .invalid: .invalid
        }
    }

    /// The code for a PCR or a rapid test (cwa-satellites §1.7): PCR 1–3 (labs post no pending), rapid 5–8.
    func code(rapid: Bool) -> Int? {
        guard rapid || self != .pending else { return nil }
        return LabTestResult(kind: rapid ? .rapidAntigen : .pcr, outcome: self.outcome).code
    }
}

/// A lab's upload of results (`/api/v1/lab/results`, or the quick-test API for rapid tests).
enum LabUpload {
    static func post(
        client: GatewayClient,
        lab: String,
        labID: String,
        results: [(id: String, code: Int)],
        rapid: Bool = false
    ) async throws -> Reply {
        let path = rapid ? "/api/v1/quicktest/results" : "/api/v1/lab/results"
        let upload: [String: Any] = ["labId": labID, "testResults": results.map { ["id": $0.id, "result": $0.code] }]
        let body = String(
            decoding: try JSONSerialization.data(withJSONObject: upload, options: [.sortedKeys]),
            as: UTF8.self
        )
        return try await client.postJSON(lab + path, body)
    }
}

/// The id a lab posts for a test: SHA-256 of the GUID of the test's QR code, as the app computes it. Rapid-test
/// results are stored under SHA-256 of that id, which is what a phone registers for a rapid test.
enum LabID {
    static func posted(guid: String) -> String { SecretHash.sha256Hex(guid) }
    static func registered(guid: String, rapid: Bool) -> String {
        rapid ? SecretHash.sha256Hex(self.posted(guid: guid)) : self.posted(guid: guid)
    }
}

extension LabCommand {
    struct Upload: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Post a test result for a GUID.")

        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var lab: LabOptions
        @Option(help: "pending (rapid only), negative, positive or invalid.")
        var result: LabResult
        @Option(help: "The GUID of the test's QR code.")
        var guid: String
        @Flag(help: "A rapid antigen test (quicktest API) instead of PCR.")
        var rapid = false

        func run() async throws {
            guard let code = self.result.code(rapid: self.rapid) else {
                throw ValidationError("labs post 'pending' only for rapid tests")
            }
            let reply = try await withGateway(try self.lab.client(gateway: self.gateway)) { client in
                try await LabUpload.post(
                    client: client,
                    lab: self.lab.lab,
                    labID: self.lab.labID,
                    results: [(LabID.posted(guid: self.guid), code)],
                    rapid: self.rapid
                )
            }
            print("lab upload: HTTP \(reply.status)\(reply.status == 204 ? "" : " \(reply.text.prefix(200))")")
            guard reply.status == 204 else { throw ExitCode(3) }
        }
    }
}
