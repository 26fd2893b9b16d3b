// Valid TANs and registration tokens for load tests, made the way phones and labs make them, through the gateway.

import ENCrypto
import ENModels
import Foundation

/// Prepares what real requests need before the timed part of a test starts.
struct Provisioner {
    let app: GatewayClient
    let lab: GatewayClient
    let appURL: String
    let labURL: String
    /// The lab id the lab's certificate is admitted under.
    let labID: String
    /// Requests in flight while preparing.
    var concurrency = 32

    /// `count` registration tokens of tests with a positive PCR result: one lab upload per 500 GUIDs, then one
    /// registration per GUID.
    func registrationTokens(_ count: Int, progress: (String) -> Void) async throws -> [String] {
        let guids = (0..<count).map { _ in UUID().uuidString }
        let positive = LabTestResult(kind: .pcr, outcome: .positive).code
        for start in stride(from: 0, to: guids.count, by: 500) {
            let batch = guids[start..<min(start + 500, guids.count)].map {
                (id: LabID.posted(guid: $0), code: positive)
            }
            let reply = try await LabUpload.post(client: self.lab, lab: self.labURL, labID: self.labID, results: batch)
            guard reply.status == 204 else {
                throw ClientFailure("lab upload for the load test: HTTP \(reply.status) \(reply.text.prefix(200))")
            }
        }
        progress("uploaded \(count) positive results")
        let tokens = try await self.each(guids) { guid in
            try await RegistrationCalls.register(
                client: self.app,
                app: self.appURL,
                key: LabID.posted(guid: guid),
                keyType: "GUID"
            )
        }
        progress("registered \(count) tests")
        return tokens
    }

    /// `count` TANs, each good for one submission.
    func tans(_ count: Int, progress: (String) -> Void) async throws -> [String] {
        let tokens = try await self.registrationTokens(count, progress: progress)
        let tans = try await self.each(tokens) { token in
            try await SubmissionCalls.tan(client: self.app, app: self.appURL, registrationToken: token)
        }
        progress("got \(count) TANs")
        return tans
    }

    /// Runs `body` with a provisioner on `app` and a lab client made from the options, which it shuts down after.
    static func with<T>(
        app: GatewayClient,
        gateway: GatewayOptions,
        lab: LabOptions,
        _ body: (Provisioner) async throws -> T
    ) async throws -> T {
        try await withGateway(try lab.client(gateway: gateway)) { labClient in
            try await body(
                Provisioner(app: app, lab: labClient, appURL: gateway.app, labURL: lab.lab, labID: lab.labID)
            )
        }
    }

    /// `transform` over `items` with at most `concurrency` at a time, results in the order of `items`.
    private func each<T: Sendable, R: Sendable>(
        _ items: [T],
        _ transform: @escaping @Sendable (T) async throws -> R
    ) async throws -> [R] {
        try await withThrowingTaskGroup(of: (Int, R).self) { group in
            var results = [R?](repeating: nil, count: items.count)
            var next = 0
            while next < min(self.concurrency, items.count) {
                let index = next
                group.addTask { (index, try await transform(items[index])) }
                next += 1
            }
            while let (index, result) = try await group.next() {
                results[index] = result
                if next < items.count {
                    let index = next
                    group.addTask { (index, try await transform(items[index])) }
                    next += 1
                }
            }
            return results.map { $0! }
        }
    }
}
