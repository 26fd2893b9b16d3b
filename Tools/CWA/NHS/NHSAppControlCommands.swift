// `cwa nhs ipc …` and `cwa nhs circuit-breaker …`: an isolation payment walked from the app to the payment website
// (nhs §8), and circuit-breaker approvals asked and polled (§7). Every signed answer is verified.

import ArgumentParser
import ENCrypto
import ENModels
import Foundation
import NIOHTTP1

extension NHSCommand {
    struct IPC: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ipc",
            abstract:
                "Isolation payment: the app creates and unlocks a token, the payment website verifies and consumes it.",
            subcommands: [Create.self, Update.self, Verify.self, Consume.self]
        )

        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "The app asks for a token (its country decides): prints the token, or `not enabled`."
            )
            @OptionGroup var gateway: GatewayOptions
            @OptionGroup var nhs: NHSOptions

            func run() async throws {
                let (reply, signature) = try await self.nhs.signedPost(
                    self.gateway,
                    path: "/isolation-payment/ipc-token/create",
                    json: jsonObject(["country": self.nhs.country])
                )
                guard reply.status == 201 else { throw ClientFailure("create: HTTP \(reply.status) \(reply.text)") }
                struct Answer: Decodable {
                    var isEnabled: Bool
                    var ipcToken: String?
                }
                let answer = try decodeJSON(Answer.self, from: reply, what: "ipc create")
                FileHandle.standardError.write(Data("\(signature)\n".utf8))
                print(answer.ipcToken ?? "not enabled")
            }
        }

        struct Update: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract:
                    "The person claims: the app unlocks the token with the isolation's dates; prints the claim page."
            )
            @OptionGroup var gateway: GatewayOptions
            @OptionGroup var nhs: NHSOptions
            @Option(help: "The token from `cwa nhs ipc create`.")
            var token: String
            @Option(name: .customLong("encounter-days-ago"), help: "Days since the risky encounter.")
            var encounterDaysAgo = 2
            @Option(name: .customLong("isolation-days-left"), help: "Days until the isolation ends.")
            var isolationDaysLeft = 9

            func run() async throws {
                let now = Date()
                let body = jsonObject([
                    "ipcToken": self.token,
                    "riskyEncounterDate": now.addingTimeInterval(-Double(self.encounterDaysAgo) * 86_400)
                        .formatted(.iso8601),
                    "isolationPeriodEndDate": now.addingTimeInterval(Double(self.isolationDaysLeft) * 86_400)
                        .formatted(.iso8601),
                ])
                let (reply, signature) = try await self.nhs.signedPost(
                    self.gateway,
                    path: "/isolation-payment/ipc-token/update",
                    json: body
                )
                guard reply.status == 200 else { throw ClientFailure("update: HTTP \(reply.status) \(reply.text)") }
                struct Answer: Decodable { var websiteUrlWithQuery: String }
                FileHandle.standardError.write(Data("\(signature)\n".utf8))
                print(try decodeJSON(Answer.self, from: reply, what: "ipc update").websiteUrlWithQuery)
            }
        }

        struct Verify: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "The payment website checks a token: prints the answer (HTTP 200 valid, 422 invalid)."
            )
            @OptionGroup var gateway: GatewayOptions
            @OptionGroup var website: NHSWebsiteOptions
            @Option(help: "The token.")
            var token: String

            func run() async throws {
                try await self.website.call(self.gateway, "verify-token", token: self.token)
            }
        }

        struct Consume: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "The payment website spends a token: prints the answer (HTTP 200 consumed, 422 invalid)."
            )
            @OptionGroup var gateway: GatewayOptions
            @OptionGroup var website: NHSWebsiteOptions
            @Option(help: "The token.")
            var token: String

            func run() async throws {
                try await self.website.call(self.gateway, "consume-token", token: self.token)
            }
        }
    }

    struct CircuitBreaker: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "circuit-breaker",
            abstract: "Ask for an approval to alert (prints the token and yes, no or pending), or poll a token's."
        )
        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var nhs: NHSOptions
        @Option(help: "exposure-notification or venue.")
        var kind = "exposure-notification"
        @Option(help: "Poll this approval token's resolution instead of asking anew.")
        var token: String?

        func run() async throws {
            guard ["exposure-notification", "venue"].contains(self.kind) else {
                throw ValidationError("--kind must be exposure-notification or venue")
            }
            let (reply, signature): (Reply, String)
            if let token = self.token {
                (reply, signature) = try await withGateway(try self.gateway.client()) { client in
                    try await self.nhs.call(
                        client,
                        gateway: self.gateway,
                        .GET,
                        path: "/circuit-breaker/\(self.kind)/resolution/\(token)",
                        json: nil
                    )
                }
            } else {
                // The app's exposure request carries the match; a venue request carries nothing of the venue.
                let body =
                    self.kind == "venue"
                    ? "{}"
                    : #"{"matchedKeyCount":1,"daysSinceLastExposure":2,"maximumRiskScore":150.0,"riskCalculationVersion":2}"#
                (reply, signature) = try await self.nhs.signedPost(
                    self.gateway,
                    path: "/circuit-breaker/\(self.kind)/request",
                    json: body
                )
            }
            guard reply.status == 200 else {
                throw ClientFailure("circuit-breaker: HTTP \(reply.status) \(reply.text) (\(signature))")
            }
            struct Answer: Decodable {
                var approvalToken: String?
                var approval: String
            }
            let answer = try decodeJSON(Answer.self, from: reply, what: "circuit-breaker")
            FileHandle.standardError.write(Data("\(signature)\n".utf8))
            print([answer.approvalToken, answer.approval].compactMap { $0 }.joined(separator: " "))
        }
    }
}

extension NHSCommand {
    struct UploadVenues: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "upload-venues",
            abstract: "An external system uploads the whole list of risky venues (CSV) to the portal with its API key."
        )
        @OptionGroup var gateway: GatewayOptions
        @Option(name: .customLong("portal-url"), help: "The gateway's portal server (env CWA_PORTAL_URL).")
        var portalURL: String = environment("CWA_PORTAL_URL", "https://127.0.0.1:8445")!
        @Option(name: .customLong("venues-key"), help: "The API key highRiskVenuesCodeUpload (env CWA_NHS_VENUES_KEY).")
        var keyOption: String?
        @Argument(help: "The CSV file (- for standard input).")
        var file: String

        func run() async throws {
            guard let key = self.keyOption ?? environment("CWA_NHS_VENUES_KEY") else {
                throw ValidationError("--venues-key (or CWA_NHS_VENUES_KEY) is required")
            }
            try await NHSCommand.upload(
                self.file,
                to: self.portalURL.trimmingSuffix("/") + "/upload/identified-risk-venues",
                key: key,
                contentType: "text/csv",
                gateway: self.gateway
            )
        }
    }

    struct UploadPostDistricts: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "upload-post-districts",
            abstract:
                "An external system uploads the risky post districts' tiers (JSON) to the portal with its API key."
        )
        @OptionGroup var gateway: GatewayOptions
        @Option(name: .customLong("portal-url"), help: "The gateway's portal server (env CWA_PORTAL_URL).")
        var portalURL: String = environment("CWA_PORTAL_URL", "https://127.0.0.1:8445")!
        @Option(
            name: .customLong("districts-key"),
            help: "The API key highRiskPostCodeUpload (env CWA_NHS_DISTRICTS_KEY)."
        )
        var keyOption: String?
        @Argument(help: "The JSON file (- for standard input).")
        var file: String

        func run() async throws {
            guard let key = self.keyOption ?? environment("CWA_NHS_DISTRICTS_KEY") else {
                throw ValidationError("--districts-key (or CWA_NHS_DISTRICTS_KEY) is required")
            }
            try await NHSCommand.upload(
                self.file,
                to: self.portalURL.trimmingSuffix("/") + "/upload/high-risk-postal-districts",
                key: key,
                contentType: "application/json",
                gateway: self.gateway
            )
        }
    }

    /// Posts a list file with an NHS API key; prints `HTTP <status> <body>`, exit status 1 unless 202.
    static func upload(
        _ file: String,
        to url: String,
        key: String,
        contentType: String,
        gateway: GatewayOptions
    ) async throws {
        let data: Data
        if file == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: file) else {
                throw ClientFailure("cannot read \(file)")
            }
            data = contents
        }
        let reply = try await withGateway(try gateway.client()) { client in
            try await client.send(
                .POST,
                url,
                headers: [("Authorization", "Bearer \(key)"), ("Content-Type", contentType)],
                body: [UInt8](data)
            )
        }
        print("HTTP \(reply.status) \(reply.text)")
        guard reply.status == 202 else { throw ExitCode(1) }
    }

    struct Documents: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fetch the signed static documents from the CDN and verify each (prints one line per document).",
            discussion: "The availability documents are the app's kill switch: below their minimum versions it stops."
        )
        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var nhs: NHSOptions
        @Flag(help: "Also print each document's body after its line.")
        var show = false
        @Argument(
            help:
                "Document names (default: the seven static ones; risky-venues, risky-post-districts and -v2 are others)."
        )
        var names: [String] = [
            "availability-android", "availability-ios", "exposure-configuration", "risky-venue-configuration",
            "self-isolation", "symptomatic-questionnaire", "tier-metadata",
        ]

        func run() async throws {
            let verifier = try self.nhs.verifier()
            var failed = 0
            try await withGateway(try self.gateway.client()) { client in
                for name in self.names {
                    let reply = try await client.get(self.gateway.app + "/distribution/\(name)")
                    guard reply.status == 200 else {
                        print("\(name): HTTP \(reply.status)")
                        failed += 1
                        continue
                    }
                    do {
                        let key = try verifier.verifyFile(
                            signature: reply.header("X-Amz-Meta-Signature"),
                            date: reply.header("X-Amz-Meta-Signature-Date"),
                            body: reply.body
                        )
                        print("\(name): \(reply.body.count) bytes, signature verified (key \(key))")
                        if self.show { print(reply.text) }
                    } catch {
                        print("\(name): REJECTED, \(error)")
                        failed += 1
                    }
                }
            }
            guard failed == 0 else { throw ExitCode(1) }
        }
    }

    struct Analytics: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "The app's daily analytics packet (not signed) and, with --event, one exposure-window event (signed)."
        )
        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var nhs: NHSOptions
        @Option(name: .customLong("postal-district"), help: "The postcode district the app reports.")
        var postalDistrict = "AL2"
        @Option(name: .customLong("local-authority"), help: "The local authority (LAD20CD) the app reports.")
        var localAuthority = "E07000098"
        @Flag(help: "Also send one exposure-window event.")
        var event = false

        func run() async throws {
            let metadata =
                #"{"postalDistrict":"\#(self.postalDistrict)","localAuthority":"\#(self.localAuthority)","#
                + #""deviceModel":"cwa","operatingSystemVersion":"1","latestApplicationVersion":"\#(self.nhs.appVersion)"}"#
            let end = Date()
            let packet =
                #"{"metadata":\#(metadata),"analyticsWindow":{"startDate":"\#(end.addingTimeInterval(-86_400).formatted(.iso8601))","#
                + #""endDate":"\#(end.formatted(.iso8601))"},"metrics":{"totalBackgroundTasks":288,"#
                + #""runningNormallyBackgroundTick":288,"receivedRiskyContactNotification":1},"#
                + #""includesMultipleApplicationVersions":false}"#
            let reply = try await withGateway(try self.gateway.client()) { client in
                try await client.send(
                    .POST,
                    self.gateway.app + "/submission/mobile-analytics",
                    headers: [
                        ("Authorization", "Bearer \(try self.nhs.mobileKey())"), ("Content-Type", "application/json"),
                    ],
                    body: Array(packet.utf8)
                )
            }
            print("daily packet: HTTP \(reply.status) \(reply.text)")
            guard reply.status == 200 else { throw ExitCode(1) }
            guard self.event else { return }
            let events =
                #"{"metadata":\#(metadata),"events":[{"type":"exposureWindow","version":1,"payload":"#
                + #"{"date":"\#(end.formatted(.iso8601))","infectiousness":"high","riskScore":150.5}}]}"#
            let (answer, signature) = try await self.nhs.signedPost(
                self.gateway,
                path: "/submission/mobile-analytics-events",
                json: events
            )
            print("event: HTTP \(answer.status) \(answer.text) (\(signature))")
            guard answer.status == 200 else { throw ExitCode(1) }
        }
    }
}

/// The isolation payment website's side: the external systems' server (the lab server) and its API key.
struct NHSWebsiteOptions: ParsableArguments {
    @Option(name: .customLong("lab-url"), help: "The gateway's server of external systems (env CWA_LAB_URL).")
    var labURL: String = environment("CWA_LAB_URL", "https://127.0.0.1:8444")!
    @Option(
        name: .customLong("website-key"),
        help: "The payment website's API key (isolationPayment), the value after Bearer (env CWA_NHS_IPC_KEY)."
    )
    var keyOption: String?

    /// POSTs the token to `…/<action>` and prints `HTTP <status> <body>`; fails unless 200.
    func call(_ gateway: GatewayOptions, _ action: String, token: String) async throws {
        guard let key = self.keyOption ?? environment("CWA_NHS_IPC_KEY") else {
            throw ValidationError("--website-key (or CWA_NHS_IPC_KEY) is required")
        }
        let reply = try await withGateway(try gateway.client()) { client in
            try await client.postJSON(
                self.labURL.trimmingSuffix("/") + "/isolation-payment/ipc-token/\(action)",
                #"{"contractVersion":1,"ipcToken":"\#(token)"}"#,
                headers: [("Authorization", "Bearer \(key)")]
            )
        }
        print("HTTP \(reply.status) \(reply.text)")
        guard reply.status == 200 else { throw ExitCode(1) }
    }
}
