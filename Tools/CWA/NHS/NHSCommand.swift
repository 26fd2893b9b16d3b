// `cwa nhs …`: the NHS test path from outside (nhs §3, §4): a phone orders a test, polls, exchanges a CTA token and
// submits its keys; a lab reports a result by CTA token or through the token API. Every signed answer is verified.

import ArgumentParser
import Crypto
import ENCrypto
import ENModels
import Foundation
import NIOHTTP1

struct NHSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nhs",
        abstract:
            "The NHS app: test order, lab result, token API, poll, CTA exchange, key submission, isolation payment, "
            + "circuit breakers, mobile analytics, the signed static documents.",
        discussion: """
            Phone commands keep their tokens in the phone's state file (cwa phone new) and check the signature of
            every answer with the NHS public keys (CWA_NHS_PUBLIC_KEYS, id=<PEM file> entries).
            """,
        subcommands: [
            Order.self, LabResult.self, TokenGen.self, Poll.self, Exchange.self, Submit.self, IPC.self,
            CircuitBreaker.self, Analytics.self, Documents.self, UploadVenues.self,
            UploadPostDistricts.self,
        ]
    )
}

/// The API keys and the answer-signing public keys of the NHS family.
struct NHSOptions: ParsableArguments {
    @Option(name: .customLong("api-key"), help: "The app's API key, the value after Bearer (env CWA_NHS_MOBILE_KEY).")
    var mobileKeyOption: String?
    @Option(
        name: .customLong("public-keys"),
        help: "id=<PEM public key file> entries, comma-separated, that sign answers (env CWA_NHS_PUBLIC_KEYS)."
    )
    var publicKeysOption: String?
    @Option(help: "The country the app says it is in (England, Wales, or any other).")
    var country = "England"
    @Option(name: .customLong("app-version"), help: "The app version sent in the User-Agent (v=…).")
    var appVersion = "4.10.0"

    func mobileKey() throws -> String {
        guard let key = self.mobileKeyOption ?? environment("CWA_NHS_MOBILE_KEY") else {
            throw ValidationError("--api-key (or CWA_NHS_MOBILE_KEY) is required")
        }
        return key
    }

    func verifier() throws -> NHSVerifier {
        guard let list = self.publicKeysOption ?? environment("CWA_NHS_PUBLIC_KEYS") else {
            throw ValidationError("--public-keys (or CWA_NHS_PUBLIC_KEYS) is required: answers are verified")
        }
        var keys: [String: P256.Signing.PublicKey] = [:]
        for entry in list.split(separator: ",") {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let pem = try? String(contentsOfFile: parts[1], encoding: .utf8),
                let key = try? P256.Signing.PublicKey(pemRepresentation: pem)
            else { throw ValidationError("--public-keys: '\(entry)' is not id=<PEM P-256 public key file>") }
            keys[parts[0]] = key
        }
        return NHSVerifier(keys: keys)
    }

    /// `call` on a client of its own: a POST of `json` to `path`.
    func signedPost(
        _ gateway: GatewayOptions,
        path: String,
        json: String
    ) async throws -> (
        reply: Reply, signature: String
    ) {
        try await withGateway(try gateway.client()) { client in
            try await self.call(client, gateway: gateway, .POST, path: path, json: json)
        }
    }

    /// A signed call of the phone: the API key, a fresh Request-Id and the User-Agent; the answer's signature checked
    /// (every status but 403, which is never signed). Returns the answer and `signature verified (key <id>)`.
    func call(
        _ client: GatewayClient,
        gateway: GatewayOptions,
        _ method: HTTPMethod,
        path: String,
        json: String?
    ) async throws -> (reply: Reply, signature: String) {
        let requestID = UUID().uuidString
        var headers = [
            ("Authorization", "Bearer \(try self.mobileKey())"), ("Request-Id", requestID),
            ("User-Agent", "p=Android,o=33,v=\(self.appVersion),b=1"),
        ]
        if json != nil { headers.append(("Content-Type", "application/json")) }
        let reply = try await client.send(
            method,
            gateway.app + path,
            headers: headers,
            body: json.map { Array($0.utf8) }
        )
        guard reply.status != 403 else { return (reply, "HTTP 403, not signed") }
        do {
            let keyID = try self.verifier().verifyAnswer(
                signature: reply.header("X-Amz-Meta-Signature"),
                date: reply.header("X-Amz-Meta-Signature-Date"),
                requestID: requestID,
                method: method.rawValue,
                path: path,
                body: reply.body
            )
            return (reply, "signature verified (key \(keyID))")
        } catch let failure as NHSVerifier.Failure {
            throw ClientFailure("\(method.rawValue) \(path): HTTP \(reply.status), but \(failure.description)")
        }
    }
}

/// The lab's side: the lab server and its API key.
struct NHSLabOptions: ParsableArguments {
    @Option(name: .customLong("lab-url"), help: "The gateway's lab server (env CWA_LAB_URL).")
    var labURL: String = environment("CWA_LAB_URL", "https://127.0.0.1:8444")!
    @Option(name: .customLong("lab-key"), help: "The lab's API key, the value after Bearer (env CWA_NHS_LAB_KEY).")
    var labKeyOption: String?
    @Option(help: "POSITIVE, NEGATIVE, VOID or INDETERMINATE.")
    var result = "POSITIVE"
    @Option(help: "LAB_RESULT, RAPID_RESULT or RAPID_SELF_REPORTED.")
    var kit = "LAB_RESULT"
    @Option(name: .customLong("test-end-date"), help: "yyyy-MM-dd (default: today, UTC).")
    var testEndDate: String?

    func post(_ client: GatewayClient, path: String, fields: [String: String]) async throws -> Reply {
        guard let key = self.labKeyOption ?? environment("CWA_NHS_LAB_KEY") else {
            throw ValidationError("--lab-key (or CWA_NHS_LAB_KEY) is required")
        }
        var body = fields
        body["testResult"] = self.result
        body["testKit"] = self.kit
        body["testEndDate"] = (self.testEndDate ?? utcDay(Date())) + "T00:00:00Z"
        return try await client.postJSON(
            self.labURL.trimmingSuffix("/") + path,
            jsonObject(body),
            headers: [("Authorization", "Bearer \(key)")]
        )
    }
}

extension NHSCommand {
    struct Order: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Order a test: prints the CTA token for the lab.")
        @OptionGroup var phone: PhoneFile
        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var nhs: NHSOptions

        func run() async throws {
            var state = try self.phone.load()
            let (reply, signature) = try await self.nhs.signedPost(
                self.gateway,
                path: "/virology-test/v2/order",
                json: "{}"
            )
            guard reply.status == 200 else { throw ClientFailure("order: HTTP \(reply.status) \(reply.text)") }
            struct Answer: Decodable {
                var tokenParameterValue: String
                var testResultPollingToken: String
                var diagnosisKeySubmissionToken: String
                var websiteUrlWithQuery: String
            }
            let answer = try decodeJSON(Answer.self, from: reply, what: "order")
            state.nhsCTAToken = answer.tokenParameterValue
            state.nhsPollingToken = answer.testResultPollingToken
            state.nhsSubmissionToken = answer.diagnosisKeySubmissionToken
            try self.phone.save(state)
            print(answer.tokenParameterValue)
            FileHandle.standardError.write(Data("\(signature); book the test at \(answer.websiteUrlWithQuery)\n".utf8))
        }
    }

    struct LabResult: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lab-result",
            abstract: "A test lab reports the result of an ordered test by its CTA token."
        )
        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var lab: NHSLabOptions
        @Option(help: "The CTA token of the order.")
        var cta: String
        @Option(help: "npex or fiorano (only named in the path).")
        var source = "npex"

        func run() async throws {
            let reply = try await withGateway(try self.gateway.client()) { client in
                try await self.lab.post(
                    client,
                    path: "/upload/virology-test/v2/\(self.source)-result",
                    fields: ["ctaToken": self.cta]
                )
            }
            print("HTTP \(reply.status) \(reply.text)")
            guard reply.status == 202 else { throw ExitCode(1) }
        }
    }

    struct TokenGen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "tokengen",
            abstract: "The token API: store a result of a test taken outside the app; prints its new CTA token."
        )
        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var lab: NHSLabOptions
        @Option(help: "eng or wls (only named in the path).")
        var source = "eng"

        func run() async throws {
            let reply = try await withGateway(try self.gateway.client()) { client in
                try await self.lab.post(
                    client,
                    path: "/upload/virology-test/v2/\(self.source)-result-tokengen",
                    fields: [:]
                )
            }
            guard reply.status == 200 else { throw ClientFailure("tokengen: HTTP \(reply.status) \(reply.text)") }
            struct Answer: Decodable { var ctaToken: String }
            print(try decodeJSON(Answer.self, from: reply, what: "tokengen").ctaToken)
        }
    }

    struct Poll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Poll the ordered test's result: prints the result, or `pending` (204)."
        )
        @OptionGroup var phone: PhoneFile
        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var nhs: NHSOptions

        func run() async throws {
            let state = try self.phone.load()
            guard let token = state.nhsPollingToken else { throw ClientFailure("no order: run `cwa nhs order` first") }
            let (reply, signature) = try await self.nhs.signedPost(
                self.gateway,
                path: "/virology-test/v2/results",
                json: jsonObject(["testResultPollingToken": token, "country": self.nhs.country])
            )
            switch reply.status {
            case 204: print("\(signature): pending")
            case 200: print("\(signature): \(reply.text)")
            default: throw ClientFailure("poll: HTTP \(reply.status) \(reply.text) (\(signature))")
            }
        }
    }

    struct Exchange: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Exchange a CTA token typed by the person for a submission token and the result."
        )
        @OptionGroup var phone: PhoneFile
        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var nhs: NHSOptions
        @Option(help: "The CTA token, as typed.")
        var cta: String

        func run() async throws {
            var state = try self.phone.load()
            let (reply, signature) = try await self.nhs.signedPost(
                self.gateway,
                path: "/virology-test/v2/cta-exchange",
                json: jsonObject(["ctaToken": self.cta, "country": self.nhs.country])
            )
            switch reply.status {
            case 204:
                print("\(signature): pending")
            case 200:
                struct Answer: Decodable { var diagnosisKeySubmissionToken: String }
                state.nhsCTAToken = self.cta
                state.nhsSubmissionToken = try decodeJSON(Answer.self, from: reply, what: "cta-exchange")
                    .diagnosisKeySubmissionToken
                try self.phone.save(state)
                print("\(signature): \(reply.text)")
            default:
                throw ClientFailure("cta-exchange: HTTP \(reply.status) \(reply.text) (\(signature))")
            }
        }
    }

    struct Submit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Submit the phone's keys of the last 14 days with its diagnosis key submission token."
        )
        @OptionGroup var phone: PhoneFile
        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var nhs: NHSOptions

        /// The NHS scale (0…7) of the transmission risk the CWA app gives a key of so many days ago.
        static let transmissionRiskByDaysAgo = SubmissionBuilder.transmissionRiskByDaysAgo.map { max(0, $0 - 1) }

        func run() async throws {
            let state = try self.phone.load()
            guard let token = state.nhsSubmissionToken else {
                throw ClientFailure("no submission token: run `cwa nhs order` or `cwa nhs exchange` first")
            }
            let body = try Self.payload(token: token, keys: state.keys, now: Date())
            let (reply, signature) = try await self.nhs.signedPost(
                self.gateway,
                path: "/submission/diagnosis-keys",
                json: body
            )
            guard reply.status == 200 else {
                throw ClientFailure("submit: HTTP \(reply.status) \(reply.text) (\(signature))")
            }
            print("\(signature): submitted, HTTP 200 (the answer is the same whether the keys were stored)")
        }

        /// The keys a submission at `now` sends (those of the days the transmission risk table covers), with their
        /// days before today.
        static func sentKeys(_ keys: [ExposureKey], now: Date) -> [(key: ExposureKey, daysAgo: Int)] {
            let today = ENInterval.dayStart(of: ENInterval.number(of: now))
            return keys.compactMap { key in
                let daysAgo = Int((Int64(today) - Int64(key.rollingStartIntervalNumber)) / Int64(ENInterval.perDay))
                guard daysAgo >= 0, daysAgo < Self.transmissionRiskByDaysAgo.count else { return nil }
                return (key, daysAgo)
            }
        }

        static func payload(token: String, keys: [ExposureKey], now: Date) throws -> String {
            let entries: [[String: Any]] = Self.sentKeys(keys, now: now).map { key, daysAgo in
                [
                    "key": key.keyData.base64EncodedString(), "rollingStartNumber": key.rollingStartIntervalNumber,
                    "rollingPeriod": key.rollingPeriod,
                    "transmissionRiskLevel": Self.transmissionRiskByDaysAgo[daysAgo],
                    "daysSinceOnsetOfSymptoms": -daysAgo,
                ]
            }
            let object: [String: Any] = ["diagnosisKeySubmissionToken": token, "temporaryExposureKeys": entries]
            return String(
                decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]),
                as: UTF8.self
            )
        }
    }
}
