// `cwa nhs ipc …` and `cwa nhs circuit-breaker …`: an isolation payment walked from the app to the payment website
// (nhs.md §8), and circuit-breaker approvals asked and polled (§7). Every signed answer is verified.

import ArgumentParser
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
