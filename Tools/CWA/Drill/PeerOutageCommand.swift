// `cwa drill peer-outage`: phones keep submitting (or polling) while the drill script kills the peer service the
// requests need and starts it again (`make drills`). Every answer must be a success or the documented 503; afterwards
// a TAN whose submission got a 503 is used again with new keys: either those or the first keys end up stored.

import ArgumentParser
import ENModels
import Foundation

extension DrillCommand {
    struct PeerOutage: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "peer-outage",
            abstract: "Submissions or result polls at a steady rate while the drill script kills their peer.",
            discussion: """
                --kind submissions: a lab posts --count positive results, each is registered and gets a TAN; then \
                every TAN is submitted once, --rate per second. Prints the answers per status, waits for \
                --resume-file (the peer is back) and submits every TAN not answered 200 again with new keys. \
                --refused-file gets two lines per such TAN, `<n> first <key hex,…>` and `<n> second <key hex,…>`: \
                exactly one of the two key sets must end up stored.
                --kind polls: --count registered positive results are polled, --rate per second for --seconds; a \
                503 must carry `Retry-After: 30`. After --resume-file every token is polled once more.
                --started-file is created when the load begins. Lines: `<kind>: <status>×<count> …` and \
                `after: <status>×<count> …`.
                """
        )

        enum Kind: String, ExpressibleByArgument, CaseIterable { case submissions, polls }

        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var lab: LabOptions
        @Option(help: "submissions (verification-service is the peer) or polls (test-result-service is).")
        var kind: Kind
        @Option(help: "TANs to submit, or registration tokens to poll.")
        var count = 60
        @Option(help: "Requests per second.")
        var rate = 10.0
        @Option(help: "How long to poll (polls only; submissions take --count / --rate seconds).")
        var seconds = 10.0
        @Option(name: .customLong("started-file"), help: "Created when the load begins.")
        var startedFile: String
        @Option(
            name: .customLong("resume-file"),
            help: "The second round waits until this file exists (at most 120 s)."
        )
        var resumeFile: String
        @Option(name: .customLong("refused-file"), help: "The key data of both rounds of each TAN not answered 200.")
        var refusedFile: String?
        @Option(
            name: .customLong("secrets-file"),
            help: "Write the registration tokens and TANs used here (mode 600), for the check at rest."
        )
        var secretsFile: String?

        func validate() throws {
            guard (1...5000).contains(self.count), (0.5...200).contains(self.rate), (1...600).contains(self.seconds)
            else { throw ValidationError("--count must be 1…5000, --rate 0.5…200 and --seconds 1…600") }
        }

        func run() async throws {
            let app = self.gateway.app
            let registrations = try await withGateway(try self.lab.client(gateway: self.gateway)) { labClient in
                try await withGateway(try self.gateway.client(connections: 64)) { appClient in
                    try await Self.registerPositives(
                        self.count,
                        app: app,
                        lab: self.lab.lab,
                        labID: self.lab.labID,
                        labClient: labClient,
                        appClient: appClient
                    )
                }
            }
            try await withGateway(try self.gateway.client(connections: 64)) { client in
                switch self.kind {
                case .submissions: try await self.submissions(tokens: registrations, client: client, app: app)
                case .polls: try await self.polls(tokens: registrations, client: client, app: app)
                }
            }
        }

        /// `count` new GUIDs with a positive result each, registered: their registration tokens.
        static func registerPositives(
            _ count: Int,
            app: String,
            lab labURL: String,
            labID: String,
            labClient: GatewayClient,
            appClient: GatewayClient
        ) async throws -> [String] {
            let guids = (0..<count).map { _ in "peer-outage-\(UUID().uuidString.lowercased())" }
            let positive = LabResult.positive.code(rapid: false) ?? 0
            for batch in stride(from: 0, to: count, by: 500) {
                let results = guids[batch..<min(count, batch + 500)].map { (LabID.posted(guid: $0), positive) }
                let reply = try await LabUpload.post(client: labClient, lab: labURL, labID: labID, results: results)
                guard reply.status == 204 else { throw ClientFailure("lab upload: HTTP \(reply.status) \(reply.text)") }
            }
            struct Registered: Decodable { var registrationToken: String }
            return try await withThrowingTaskGroup(of: String.self) { group in
                for guid in guids {
                    group.addTask {
                        let reply = try await appClient.postJSON(
                            "\(app)/version/v1/registrationToken",
                            jsonObject(["key": LabID.registered(guid: guid, rapid: false), "keyType": "GUID"]),
                            headers: [("cwa-fake", "0")]
                        )
                        guard reply.status == 201 else {
                            throw ClientFailure("registration: HTTP \(reply.status) \(reply.text)")
                        }
                        return try decodeJSON(Registered.self, from: reply, what: "registration").registrationToken
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }

        func submissions(tokens: [String], client: GatewayClient, app: String) async throws {
            var tans: [String] = []
            for token in tokens {
                tans.append(try await SubmissionCalls.tan(client: client, app: app, registrationToken: token))
            }
            try self.remember(tokens + tans)
            try DrillCommand.writePrivate("", to: self.startedFile)
            let now = Date()
            let first = try await Self.steady(tans, interval: .seconds(1 / self.rate)) { tan in
                let keys = PhoneState.new(days: 14, now: now).keys
                let payload = try SubmissionBuilder.payload(keys: keys, checkIns: 0, now: now)
                let reply = try await SubmissionCalls.submit(client: client, app: app, tan: tan, payload: payload)
                return (reply.status, keys.map(\.hex))
            }
            print("submissions: \(RaceOutcome(first.map(\.status)).summary)")
            let refused = zip(tans, first).filter { $0.1.status != 200 }
            try await Self.waitFor(self.resumeFile)
            let again = try await Self.steady(refused.map(\.0), interval: .milliseconds(20)) { tan in
                let now = Date()
                let keys = PhoneState.new(days: 14, now: now).keys
                let payload = try SubmissionBuilder.payload(keys: keys, checkIns: 0, now: now)
                let reply = try await SubmissionCalls.submit(client: client, app: app, tan: tan, payload: payload)
                return (reply.status, keys.map(\.hex))
            }
            if let path = self.refusedFile {
                let lines = zip(refused, again).enumerated().flatMap { index, pair in
                    [
                        "\(index) first \(pair.0.1.detail.joined(separator: ","))",
                        "\(index) second \(pair.1.detail.joined(separator: ","))",
                    ]
                }
                try DrillCommand.writePrivate(lines.joined(separator: "\n") + "\n", to: path)
            }
            print("after: \(RaceOutcome(again.map(\.status)).summary)")
        }

        func polls(tokens: [String], client: GatewayClient, app: String) async throws {
            try self.remember(tokens)
            try DrillCommand.writePrivate("", to: self.startedFile)
            let total = Int(self.seconds * self.rate)
            let round = (0..<total).map { tokens[$0 % tokens.count] }
            let poll: @Sendable (String) async throws -> (status: Int, detail: [String]) = { token in
                let reply = try await client.postJSON(
                    "\(app)/version/v1/testresult",
                    jsonObject(["registrationToken": token]),
                    headers: [("cwa-fake", "0")]
                )
                let retryAfter = reply.headers.first { $0.name.lowercased() == "retry-after" }?.value
                return (reply.status, reply.status == 503 && retryAfter != "30" ? ["no Retry-After: 30"] : [])
            }
            let first = try await Self.steady(round, interval: .seconds(1 / self.rate), poll)
            let unannounced = first.filter { !$0.detail.isEmpty }.count
            print("polls: \(RaceOutcome(first.map(\.status)).summary), 503 without Retry-After 30: \(unannounced)")
            try await Self.waitFor(self.resumeFile)
            let again = try await Self.steady(tokens, interval: .milliseconds(20), poll)
            print("after: \(RaceOutcome(again.map(\.status)).summary)")
        }

        /// `call` for each item, one every `interval`, none waiting for another; the answers in the items' order
        /// (status 0: no answer).
        static func steady(
            _ items: [String],
            interval: Duration,
            _ call: @escaping @Sendable (String) async throws -> (status: Int, detail: [String])
        ) async throws -> [(status: Int, detail: [String])] {
            let answers = await withTaskGroup(of: (Int, (status: Int, detail: [String])).self) { group in
                let clock = ContinuousClock()
                let start = clock.now
                for (index, item) in items.enumerated() {
                    try? await clock.sleep(until: start + interval * index)
                    group.addTask { (index, (try? await call(item)) ?? (0, [])) }
                }
                return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            return items.indices.map { answers[$0] ?? (0, []) }
        }

        /// Writes `secrets`, one per line, to `--secrets-file`.
        func remember(_ secrets: [String]) throws {
            guard let path = self.secretsFile else { return }
            try DrillCommand.writePrivate(secrets.joined(separator: "\n") + "\n", to: path)
        }

        /// Returns once `path` exists; throws after 120 s.
        static func waitFor(_ path: String) async throws {
            for _ in 0..<600 {
                if FileManager.default.fileExists(atPath: path) { return }
                try await Task.sleep(for: .milliseconds(200))
            }
            throw ClientFailure("\(path) did not appear within 120 s")
        }
    }
}
