// `cwa drill races`: the races on single-use secrets (`make drills`): each secret is used many times at once through
// the gateway, as a crowd of phones would; exactly one use may succeed, the others must get the documented refusal,
// and none a 5xx or a transport failure. A 503 with `Retry-After` (a pool whose connections are all taken for longer
// than `DATABASE_LEASE_TIMEOUT`) is the service's documented back-pressure: the phone tries again after it, as an
// app does, and the answer it gets then is the one that counts.

import ArgumentParser
import ENModels
import Foundation
import NIOHTTP1

struct DrillCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drill",
        abstract: "Reliability drills against a fleet (make drills).",
        subcommands: [Races.self, Outage.self, PeerOutage.self]
    )
}

extension DrillCommand {
    /// Writes `text` to `path`, readable by its owner only: the drills' files hold secrets and acknowledged ids.
    static func writePrivate(_ text: String, to path: String) throws {
        guard
            FileManager.default.createFile(
                atPath: path,
                contents: Data(text.utf8),
                attributes: [.posixPermissions: 0o600]
            )
        else { throw ClientFailure("cannot write \(path)") }
    }
}

/// The last answers of one race's calls, and how many calls were tried again after a 503.
struct RaceReplies: Sendable {
    var replies: [Reply] = []
    var retried = 0
}

/// How the answers to one race came out: the count per status (0: no answer).
struct RaceOutcome: Sendable, Equatable {
    var statuses: [Int: Int]

    init(_ statuses: [Int]) {
        self.statuses = statuses.reduce(into: [:]) { $0[$1, default: 0] += 1 }
    }

    /// `201×1 400×999`, statuses in order; `none×3` for requests without an answer.
    var summary: String {
        self.statuses.sorted { $0.key < $1.key }.map { "\($0.key == 0 ? "none" : "\($0.key)")×\($0.value)" }
            .joined(separator: " ")
    }

    /// Exactly one `success`, every other answer one of `refusals`.
    func isOneWinner(success: Int, refusals: Set<Int>) -> Bool {
        self.statuses[success] == 1
            && self.statuses.allSatisfy { $0.key == success || refusals.contains($0.key) }
    }
}

extension DrillCommand {
    struct Races: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Use one GUID, one teleTAN, one registration token, one TAN and one self-report OTP many times at once.",
            discussion: """
                The GUID must have a positive result posted by a lab and be unregistered; the teleTAN must be unused. \
                Prints one line per race (`ok` or `FAIL`, the race, the answers per status) and exits 1 when a race \
                did not have exactly one winner with every other answer the documented refusal. A 503 is tried again \
                after its Retry-After (at most 3 s, at most 5 times), as an app does; the last answer counts, and \
                the line says how many uses were tried again.
                """
        )

        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var playIntegrity: PlayIntegrityOptions
        @Option(help: "Uses of each secret at once.")
        var count = 1000
        @Option(help: "A GUID with a positive result a lab posted, not yet registered.")
        var guid: String
        @Option(help: "An unused teleTAN.")
        var teletan: String
        @Option(
            name: .customLong("secrets-file"),
            help: "Write the registration token and the TAN the races used here (mode 600), for the check at rest."
        )
        var secretsFile: String?

        func validate() throws {
            guard (2...10_000).contains(self.count) else { throw ValidationError("--count must be 2…10000") }
        }

        func run() async throws {
            let app = self.gateway.app
            let count = self.count
            let guidHash = LabID.registered(guid: self.guid, rapid: false)
            let teleTAN = self.teletan
            let failures = try await withGateway(try self.gateway.client(connections: 256)) { client in
                var failures = 0
                func report(_ name: String, _ race: RaceReplies, success: Int, refusals: Set<Int>) {
                    let outcome = RaceOutcome(race.replies.map(\.status))
                    let ok = outcome.isOneWinner(success: success, refusals: refusals)
                    let retried = race.retried == 0 ? "" : " (\(race.retried) tried again after a 503)"
                    print("\(ok ? "ok  " : "FAIL") \(name): \(outcome.summary)\(retried)")
                    if !ok { failures += 1 }
                }
                /// Everyone registers `key` at once.
                func registrations(_ key: String, type: String) async -> RaceReplies {
                    let body = jsonObject(["key": key, "keyType": type])
                    return await Self.race(count) {
                        try await client.postJSON(
                            "\(app)/version/v1/registrationToken",
                            body,
                            headers: [("cwa-fake", "0")]
                        )
                    }
                }

                // 1. One GUID registered by everyone at once: one registration token, the rest 400.
                let guids = await registrations(guidHash, type: "GUID")
                report("\(count) registrations of one GUID", guids, success: 201, refusals: [400])
                struct Registered: Decodable { var registrationToken: String }
                guard let winner = guids.replies.first(where: { $0.status == 201 }),
                    let token = try? decodeJSON(Registered.self, from: winner, what: "registration").registrationToken
                else {
                    print("FAIL the TAN races need the registration token of the GUID's registration")
                    return failures + 2
                }

                // 2. One teleTAN registered by everyone at once.
                let teleTANs = await registrations(teleTAN, type: "TELETAN")
                report("\(count) registrations of one teleTAN", teleTANs, success: 201, refusals: [400])

                // 3. The registration token polled while its TAN is asked for, both by everyone at once: every poll
                // answers the positive result, one TAN is issued, the other TAN requests 400.
                let body = jsonObject(["registrationToken": token])
                async let polls = Self.race(count) {
                    try await client.postJSON("\(app)/version/v1/testresult", body, headers: [("cwa-fake", "0")])
                }
                let tans = await Self.race(count) {
                    try await client.postJSON("\(app)/version/v1/tan", body, headers: [("cwa-fake", "0")])
                }
                let pollRace = await polls
                let pollOutcome = RaceOutcome(pollRace.replies.map(\.status))
                let pollsOK = pollOutcome.statuses == [200: count]
                let pollsRetried = pollRace.retried == 0 ? "" : " (\(pollRace.retried) tried again after a 503)"
                print(
                    "\(pollsOK ? "ok  " : "FAIL") \(count) result polls during the TAN's issue: \(pollOutcome.summary)"
                        + pollsRetried
                )
                if !pollsOK { failures += 1 }
                report(
                    "\(count) TAN requests for one registration token",
                    tans,
                    success: 201,
                    refusals: [400]
                )
                struct Issued: Decodable { var tan: String }
                guard let issued = tans.replies.first(where: { $0.status == 201 }),
                    let tan = try? decodeJSON(Issued.self, from: issued, what: "TAN").tan
                else {
                    print("FAIL the redemption race needs the issued TAN")
                    return failures + 1
                }

                try self.remember([token, tan])

                // 4. The TAN redeemed by everyone at once: one submission stored, the rest 403.
                let payload = try SubmissionBuilder.withRandomKeys(now: Date())
                let submissions = await Self.race(count) {
                    try await SubmissionCalls.submit(client: client, app: app, tan: tan, payload: payload)
                }
                report(
                    "\(count) submissions with one TAN",
                    submissions,
                    success: 200,
                    refusals: [403]
                )

                // 5. A self-report OTP (created with the rehearsal app's Play Integrity keys) redeemed by everyone at
                // once: one self-report stored, the rest 403.
                let now = Date()
                let otp = UUID().uuidString.lowercased()
                let created = try await SelfReportOTP.create(
                    otp: otp,
                    client: client,
                    app: app,
                    keys: try self.playIntegrity.load(),
                    now: now
                )
                guard created.status == 200 else {
                    print("FAIL the OTP race needs a self-report OTP: HTTP \(created.status) \(created.text)")
                    return failures + 1
                }
                try self.remember([token, tan, otp])
                // Every self-report carries keys of its own: keys stored by the winner would refuse a copy
                // (KEYS_ALREADY_EXIST) before its OTP is looked at.
                let selfReports = await Self.race(count) {
                    let selfReport = try SubmissionBuilder.payload(
                        keys: PhoneState.new(days: 14, now: now).keys,
                        checkIns: 0,
                        now: now,
                        submissionType: .srsSelfTest
                    )
                    return try await client.send(
                        .POST,
                        "\(app)/version/v1/diagnosis-keys",
                        headers: [("Content-Type", "application/x-protobuf"), ("cwa-fake", "0"), ("cwa-otp", otp)],
                        body: selfReport
                    )
                }
                report(
                    "\(count) self-reports with one OTP",
                    selfReports,
                    success: 200,
                    refusals: [403]
                )
                return failures
            }
            guard failures == 0 else { throw ExitCode(1) }
        }

        /// Writes `secrets`, one per line, to `--secrets-file` (readable by its owner only).
        func remember(_ secrets: [String]) throws {
            guard let path = self.secretsFile else { return }
            try DrillCommand.writePrivate(secrets.joined(separator: "\n") + "\n", to: path)
        }

        /// `call` `count` times at once; a call that fails without an answer counts as status 0. A 503 is tried
        /// again after its `Retry-After` (at most 3 s, at most `retries` times): the last answer is the call's.
        static func race(
            _ count: Int,
            retries: Int = 5,
            _ call: @escaping @Sendable () async throws -> Reply
        ) async -> RaceReplies {
            await withTaskGroup(of: (Reply, Bool).self) { group in
                for _ in 0..<count {
                    group.addTask {
                        var attempt = 0
                        while true {
                            let reply = (try? await call()) ?? Reply(status: 0, headers: [], body: [], seconds: 0)
                            guard reply.status == 503, attempt < retries else { return (reply, attempt > 0) }
                            attempt += 1
                            let asked = reply.header("Retry-After").flatMap(Double.init) ?? 1
                            try? await Task.sleep(for: .seconds(min(max(asked, 0.2), 3)))
                        }
                    }
                }
                return await group.reduce(into: RaceReplies()) { race, answer in
                    race.replies.append(answer.0)
                    if answer.1 { race.retried += 1 }
                }
            }
        }
    }
}

extension DrillCommand {
    struct Outage: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Lab uploads, registrations and submissions at a steady rate while the drill script breaks the fleet.",
            discussion: """
                Every 1/--rate seconds, for --seconds, a lab posts one new positive result and a phone registers \
                another new GUID (neither waits for the other requests). Prints the answers per status, the slowest \
                answer, and writes the id of every acknowledged result (204) and GUID hash (201) to --acked-file, \
                one `result <id>` or `registration <hash>` per line.
                With --submissions and --nhs-submissions, that many phones first get a TAN (CWA) or an NHS \
                submission token, then --started-file is created, and during the --seconds they submit their keys, \
                spread evenly; every 503 (or a request without an answer) is tried again with the same keys after its \
                Retry-After (at most 3 s) until another answer, for at most 60 s after the --seconds. Each \
                submission goes to --submitted-file as `<cwa|nhs> <last status> <retried|once> <key hex,…>`, and \
                the answers to lines `submissions:` and `nhs-submissions:` (first answers, last answers, retried).
                """
        )

        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var lab: LabOptions
        @Option(help: "How long to send.")
        var seconds = 20.0
        @Option(help: "Requests of each kind per second.")
        var rate = 10.0
        @Option(name: .customLong("acked-file"), help: "Where the acknowledged ids go.")
        var ackedFile: String
        @Option(help: "CWA phones that submit keys with a TAN during the load.")
        var submissions = 0
        @Option(name: .customLong("nhs-submissions"), help: "NHS phones that submit keys during the load.")
        var nhsSubmissions = 0
        @OptionGroup var nhs: NHSOptions
        @Option(name: .customLong("nhs-lab-key"), help: "The NHS lab's API key (env CWA_NHS_LAB_KEY).")
        var nhsLabKeyOption: String?
        @Option(name: .customLong("started-file"), help: "Created when the phones are ready and the load begins.")
        var startedFile: String?
        @Option(name: .customLong("submitted-file"), help: "Where each submission's outcome and keys go.")
        var submittedFile: String?

        func validate() throws {
            guard (1...600).contains(self.seconds), (0.5...200).contains(self.rate) else {
                throw ValidationError("--seconds must be 1…600 and --rate 0.5…200")
            }
            guard (0...2000).contains(self.submissions), (0...500).contains(self.nhsSubmissions) else {
                throw ValidationError("--submissions must be 0…2000 and --nhs-submissions 0…500")
            }
            if self.submissions + self.nhsSubmissions > 0, self.submittedFile == nil {
                throw ValidationError("--submitted-file is required with submissions")
            }
        }

        func run() async throws {
            let app = self.gateway.app
            let labURL = self.lab.lab
            let labID = self.lab.labID
            let total = Int(self.seconds * self.rate)
            let interval = Duration.seconds(1 / self.rate)
            let (sent, submitted) = try await withGateway(try self.lab.client(gateway: self.gateway)) { labClient in
                try await withGateway(try self.gateway.client(connections: 64)) { appClient in
                    let phones = try await self.phones(client: appClient)
                    if let path = self.startedFile { try DrillCommand.writePrivate("", to: path) }
                    async let submitted = self.submit(phones, client: appClient)
                    let sent = await Self.send(
                        total,
                        interval: interval,
                        app: app,
                        lab: labURL,
                        labID: labID,
                        labClient: labClient,
                        appClient: appClient
                    )
                    return (sent, await submitted)
                }
            }
            let acked = sent.filter {
                ($0.kind == "result" && $0.status == 204) || ($0.kind == "registration" && $0.status == 201)
            }
            try DrillCommand.writePrivate(acked.map { "\($0.kind) \($0.id)\n" }.joined(), to: self.ackedFile)
            for kind in ["result", "registration"] {
                let ofKind = sent.filter { $0.kind == kind }
                let slowest = ofKind.map(\.seconds).max() ?? 0
                print(
                    "\(kind)s: \(RaceOutcome(ofKind.map(\.status)).summary), slowest \(String(format: "%.2f", slowest)) s"
                )
            }
            guard let path = self.submittedFile else { return }
            try DrillCommand.writePrivate(
                submitted.map {
                    "\($0.kind.rawValue) \($0.statuses.last ?? 0) \($0.retried ? "retried" : "once") "
                        + $0.keys.joined(separator: ",") + "\n"
                }.joined(),
                to: path
            )
            for (kind, label) in [(OutageSubmission.Kind.cwa, "submissions"), (.nhs, "nhs-submissions")] {
                let ofKind = submitted.filter { $0.kind == kind }
                guard !ofKind.isEmpty else { continue }
                print(
                    "\(label): first \(RaceOutcome(ofKind.compactMap(\.statuses.first)).summary), last "
                        + "\(RaceOutcome(ofKind.compactMap(\.statuses.last)).summary), retried "
                        + "\(ofKind.filter(\.retried).count)"
                )
            }
        }

        /// The phones ready to submit: TANs, then NHS submission tokens.
        private func phones(client: GatewayClient) async throws -> (tans: [String], nhsTokens: [String]) {
            let tans = try await OutagePhones.tans(
                self.submissions,
                gateway: self.gateway,
                lab: self.lab,
                client: client
            )
            guard self.nhsSubmissions > 0 else { return (tans, []) }
            guard let labKey = self.nhsLabKeyOption ?? environment("CWA_NHS_LAB_KEY") else {
                throw ValidationError("--nhs-lab-key (or CWA_NHS_LAB_KEY) is required with --nhs-submissions")
            }
            let tokens = try await OutagePhones.nhsTokens(
                self.nhsSubmissions,
                gateway: self.gateway,
                nhs: self.nhs,
                labURL: self.lab.lab,
                labKey: labKey,
                client: client
            )
            return (tans, tokens)
        }

        /// Every phone submits once, spread evenly over `--seconds`, each retrying its 503s.
        private func submit(
            _ phones: (tans: [String], nhsTokens: [String]),
            client: GatewayClient
        ) async -> [OutageSubmission] {
            let work = phones.tans.map { (OutageSubmission.Kind.cwa, $0) } + phones.nhsTokens.map { (.nhs, $0) }
            guard !work.isEmpty else { return [] }
            let clock = ContinuousClock()
            let start = clock.now
            let submitter = OutageSubmitter(
                client: client,
                app: self.gateway.app,
                deadline: start + .seconds(self.seconds + 60)
            )
            let spacing = Duration.seconds(self.seconds / Double(work.count))
            let (gateway, nhs) = (self.gateway, self.nhs)
            return await withTaskGroup(of: OutageSubmission?.self) { group in
                // Interleaved, so both kinds meet the outage.
                let order = work.enumerated().sorted { ($0.offset % 2, $0.offset) < ($1.offset % 2, $1.offset) }
                for (slot, item) in order.map(\.element).enumerated() {
                    try? await clock.sleep(until: start + spacing * slot)
                    group.addTask {
                        let now = Date()
                        let keys = PhoneState.new(days: 14, now: now).keys
                        switch item.0 {
                        case .cwa: return try? await submitter.cwa(tan: item.1, keys: keys, now: now)
                        case .nhs:
                            return try? await submitter.nhs(
                                token: item.1,
                                keys: keys,
                                now: now,
                                nhs: nhs,
                                gateway: gateway
                            )
                        }
                    }
                }
                return await group.reduce(into: []) { if let done = $1 { $0.append(done) } }
            }
        }

        struct Sent: Sendable {
            var kind: String
            var id: String
            var status: Int
            var seconds: Double
        }

        /// `total` lab results and as many registrations, one of each every `interval`, none waiting for another.
        static func send(
            _ total: Int,
            interval: Duration,
            app: String,
            lab labURL: String,
            labID: String,
            labClient: GatewayClient,
            appClient: GatewayClient
        ) async -> [Sent] {
            await withTaskGroup(of: Sent.self) { group in
                let clock = ContinuousClock()
                let start = clock.now
                for index in 0..<total {
                    try? await clock.sleep(until: start + interval * index)
                    let guid = "outage-\(UUID().uuidString.lowercased())"
                    let resultID = LabID.posted(guid: guid)
                    group.addTask {
                        let reply = try? await LabUpload.post(
                            client: labClient,
                            lab: labURL,
                            labID: labID,
                            results: [(resultID, LabResult.positive.code(rapid: false) ?? 0)]
                        )
                        return Sent(
                            kind: "result",
                            id: resultID,
                            status: reply?.status ?? 0,
                            seconds: reply?.seconds ?? 0
                        )
                    }
                    let hash = LabID.registered(guid: "outage-registration-\(UUID().uuidString)", rapid: false)
                    group.addTask {
                        let reply = try? await appClient.postJSON(
                            "\(app)/version/v1/registrationToken",
                            jsonObject(["key": hash, "keyType": "GUID"]),
                            headers: [("cwa-fake", "0")]
                        )
                        return Sent(
                            kind: "registration",
                            id: hash,
                            status: reply?.status ?? 0,
                            seconds: reply?.seconds ?? 0
                        )
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
    }
}
