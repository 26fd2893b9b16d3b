// The submissions of `cwa drill outage`: phones with a TAN (CWA) or a submission token (NHS) submit their keys while
// the database is killed, and retry every 503 with the same keys, as an app does, until the answer is final.

import ENModels
import Foundation
import NIOHTTP1

/// One phone's submission during the outage: what it sent and how it ended.
struct OutageSubmission: Sendable {
    enum Kind: String, Sendable { case cwa, nhs }

    var kind: Kind
    /// The key data of its keys, hex.
    var keys: [String]
    /// Every answer, in order (0: none).
    var statuses: [Int] = []

    /// At least one attempt was answered 503 (or not at all) and was tried again.
    var retried: Bool { self.statuses.count > 1 }
}

/// Submitting with retries: each 503 (or a request without an answer) is repeated with the same payload after its
/// `Retry-After`, at most `maxWait` seconds, until an answer other than 503 or until `deadline`.
struct OutageSubmitter: Sendable {
    let client: GatewayClient
    let app: String
    let deadline: ContinuousClock.Instant
    var maxWait: Double = 3

    /// `send` until the answer is final; the statuses of every attempt.
    func untilFinal(_ send: @Sendable () async throws -> Reply) async -> [Int] {
        var statuses: [Int] = []
        while true {
            let reply = try? await send()
            let status = reply?.status ?? 0
            statuses.append(status)
            guard status == 503 || status == 0, ContinuousClock.now < self.deadline else { return statuses }
            let asked = reply?.header("Retry-After").flatMap(Double.init) ?? 1
            try? await Task.sleep(for: .seconds(min(max(asked, 0.2), self.maxWait)))
        }
    }

    /// A CWA phone's submission of `keys` with `tan`, retried.
    func cwa(tan: String, keys: [ExposureKey], now: Date) async throws -> OutageSubmission {
        let payload = try SubmissionBuilder.payload(keys: keys, checkIns: 0, now: now)
        let statuses = await self.untilFinal {
            try await SubmissionCalls.submit(client: self.client, app: self.app, tan: tan, payload: payload)
        }
        return OutageSubmission(kind: .cwa, keys: keys.map(\.hex), statuses: statuses)
    }

    /// An NHS phone's submission of `keys` with its submission token, retried.
    func nhs(
        token: String,
        keys: [ExposureKey],
        now: Date,
        nhs: NHSOptions,
        gateway: GatewayOptions
    ) async throws
        -> OutageSubmission
    {
        let body = try NHSCommand.Submit.payload(token: token, keys: keys, now: now)
        let statuses = await self.untilFinal {
            try await nhs.call(self.client, gateway: gateway, .POST, path: "/submission/diagnosis-keys", json: body)
                .reply
        }
        let sent = NHSCommand.Submit.sentKeys(keys, now: now).map(\.key.hex)
        return OutageSubmission(kind: .nhs, keys: sent, statuses: statuses)
    }
}

/// Phones ready to submit before the outage: CWA TANs of registered positive results, NHS submission tokens of ordered
/// tests with a positive result.
enum OutagePhones {
    /// `count` TANs, each of a new positive lab result registered by a new phone.
    static func tans(
        _ count: Int,
        gateway: GatewayOptions,
        lab: LabOptions,
        client: GatewayClient
    ) async throws -> [String] {
        guard count > 0 else { return [] }
        let tokens = try await withGateway(try lab.client(gateway: gateway)) { labClient in
            try await DrillCommand.PeerOutage.registerPositives(
                count,
                app: gateway.app,
                lab: lab.lab,
                labID: lab.labID,
                labClient: labClient,
                appClient: client
            )
        }
        var tans: [String] = []
        for token in tokens {
            tans.append(try await SubmissionCalls.tan(client: client, app: gateway.app, registrationToken: token))
        }
        return tans
    }

    /// `count` NHS submission tokens: each phone orders a test, the lab reports it POSITIVE by its CTA token (with
    /// `labKey`), and the phone polls its result.
    static func nhsTokens(
        _ count: Int,
        gateway: GatewayOptions,
        nhs: NHSOptions,
        labURL: String,
        labKey: String,
        client: GatewayClient
    ) async throws -> [String] {
        var tokens: [String] = []
        for _ in 0..<count {
            struct Ordered: Decodable {
                var tokenParameterValue: String
                var testResultPollingToken: String
                var diagnosisKeySubmissionToken: String
            }
            let (order, _) = try await nhs.call(
                client,
                gateway: gateway,
                .POST,
                path: "/virology-test/v2/order",
                json: "{}"
            )
            guard order.status == 200 else { throw ClientFailure("NHS order: HTTP \(order.status)") }
            let ordered = try decodeJSON(Ordered.self, from: order, what: "NHS order")
            let result = try await client.postJSON(
                labURL.trimmingSuffix("/") + "/upload/virology-test/v2/npex-result",
                jsonObject([
                    "ctaToken": ordered.tokenParameterValue, "testResult": "POSITIVE", "testKit": "LAB_RESULT",
                    "testEndDate": utcDay(Date()) + "T00:00:00Z",
                ]),
                headers: [("Authorization", "Bearer \(labKey)")]
            )
            guard result.status == 202 else { throw ClientFailure("NHS lab result: HTTP \(result.status)") }
            let (poll, _) = try await nhs.call(
                client,
                gateway: gateway,
                .POST,
                path: "/virology-test/v2/results",
                json: jsonObject(["testResultPollingToken": ordered.testResultPollingToken, "country": nhs.country])
            )
            guard poll.status == 200 else { throw ClientFailure("NHS poll: HTTP \(poll.status)") }
            tokens.append(ordered.diagnosisKeySubmissionToken)
        }
        return tokens
    }
}

extension ExposureKey {
    /// The key data, hex.
    var hex: String { self.keyData.map { String(format: "%02x", $0) }.joined() }
}
