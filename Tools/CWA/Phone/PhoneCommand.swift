// `cwa phone …`: a simulated phone with its own keys, talking to verification, submission and the CDN.

import ArgumentParser
import Crypto
import ENModels
import Foundation
import NIOHTTP1

struct PhoneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "phone",
        abstract: "A simulated phone: keys, encounters, test registration, submission and CDN sync.",
        subcommands: [New.self, Meet.self, Register.self, Poll.self, Submit.self, SelfReport.self, Sync.self]
    )
}

/// The phone's state file.
struct PhoneFile: ParsableArguments {
    @Option(name: .customLong("state"), help: "The phone's state file.")
    var path: String = "phone.json"

    func load() throws -> PhoneState { try PhoneState.load(self.path) }
    func save(_ state: PhoneState) throws { try state.save(self.path) }
}

extension PhoneCommand {
    struct New: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a phone with one temporary exposure key per day."
        )

        @OptionGroup var phone: PhoneFile
        @Option(help: "Days of keys, today included.")
        var days: Int = 14
        @Flag(help: "Replace an existing state file.")
        var force = false

        func run() async throws {
            guard (1...30).contains(self.days) else { throw ValidationError("--days must be 1…30") }
            if !self.force && FileManager.default.fileExists(atPath: self.phone.path) {
                throw ClientFailure("\(self.phone.path) exists (use --force to replace it)")
            }
            let state = PhoneState.new(days: self.days, now: Date())
            try self.phone.save(state)
            print(
                "new phone \(self.phone.path): \(state.keys.count) keys, \(utcDay(ENInterval.date(of: state.keys[0].rollingStartIntervalNumber)))…\(utcDay(Date()))"
            )
        }
    }

    struct Meet: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Record another phone's broadcast as heard by this one.",
            discussion:
                "By default the meeting is two days ago at 12:00 UTC, so its key is past the distribution's expiry policy."
        )

        @OptionGroup var phone: PhoneFile
        @Argument(help: "The other phone's state file.")
        var other: String
        @Option(help: "Minutes together.")
        var minutes: Int = 15
        @Option(help: "Attenuation in dB (lower is closer).")
        var attenuation: Int = 55
        @Option(help: "Start of the meeting, ISO 8601 (e.g. 2026-11-22T12:00:00Z).")
        var at: String?

        func run() async throws {
            guard (1...24 * 60).contains(self.minutes) else { throw ValidationError("--minutes must be 1…1440") }
            guard (0...255).contains(self.attenuation) else { throw ValidationError("--attenuation must be 0…255") }
            let start: Date
            if let at = self.at {
                guard let parsed = try? Date(at, strategy: .iso8601) else {
                    throw ValidationError("--at must be ISO 8601, e.g. 2026-11-22T12:00:00Z")
                }
                start = parsed
            } else {
                let day = ENInterval.dayStart(of: ENInterval.number(of: Date())) - 2 * ENInterval.perDay
                start = ENInterval.date(of: day + 72)
            }
            var state = try self.phone.load()
            let other = try PhoneState.load(self.other)
            let heard = try Encounter.observe(
                broadcaster: other,
                from: start,
                minutes: self.minutes,
                attenuation: self.attenuation
            )
            state.observations += heard
            try self.phone.save(state)
            print(
                "heard \(self.other) for \(self.minutes) min from \(start.formatted(.iso8601)) at \(self.attenuation) dB: \(heard.count) identifiers recorded"
            )
        }
    }

    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a test (QR code GUID) or a teleTAN for a registration token."
        )

        @OptionGroup var phone: PhoneFile
        @OptionGroup var gateway: GatewayOptions
        @Option(help: "The GUID of the test's QR code (the phone sends its SHA-256).")
        var guid: String?
        @Option(help: "A teleTAN from the hotline.")
        var teletan: String?
        @Flag(help: "The GUID is of a rapid test.")
        var rapid = false

        func run() async throws {
            let (key, keyType): (String, String)
            switch (self.guid, self.teletan) {
            case (let guid?, nil): (key, keyType) = (LabID.registered(guid: guid, rapid: self.rapid), "GUID")
            case (nil, let teleTAN?): (key, keyType) = (teleTAN, "TELETAN")
            default: throw ValidationError("give exactly one of --guid and --teletan")
            }
            var state = try self.phone.load()
            state.registrationToken = try await withGateway(try self.gateway.client()) { client in
                try await RegistrationCalls.register(client: client, app: self.gateway.app, key: key, keyType: keyType)
            }
            state.lastTestResult = nil
            try self.phone.save(state)
            print("registered (HTTP 201); the registration token is in \(self.phone.path)")
        }
    }

    struct Poll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Ask for the registered test's result.")

        @OptionGroup var phone: PhoneFile
        @OptionGroup var gateway: GatewayOptions

        func run() async throws {
            var state = try self.phone.load()
            guard let token = state.registrationToken else {
                throw ClientFailure("no registered test (cwa phone register first)")
            }
            struct Answer: Decodable { var testResult: Int }
            let reply = try await withGateway(try self.gateway.client()) { client in
                try await RegistrationCalls.poll(client: client, app: self.gateway.app, registrationToken: token)
            }
            guard reply.status == 200 else { throw ClientFailure("poll refused: HTTP \(reply.status) \(reply.text)") }
            let result = try decodeJSON(Answer.self, from: reply, what: "poll").testResult
            state.lastTestResult = result
            try self.phone.save(state)
            print("test result \(result) (\(TestResultName.of(result)))")
        }
    }

    struct Submit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Get a TAN for a positive test and upload the phone's keys and check-ins.",
            discussion:
                "With --fake, sends a dummy submission (cwa-fake: 1) of the same size instead; nothing is stored."
        )

        @OptionGroup var phone: PhoneFile
        @OptionGroup var gateway: GatewayOptions
        @Option(help: "Encrypted check-ins to upload with the keys.")
        var checkins: Int = 0
        @Flag(help: "Send a dummy submission, as phones do to hide real ones.")
        var fake = false
        @Flag(
            name: .customLong("reuse-tan"),
            help: "Submit with the TAN of the last submission again (it must be refused)."
        )
        var reuseTAN = false
        @Flag(help: "Submit as a rapid-test result.")
        var rapid = false
        @Option(help: "The country of the backend the phone submits to (the payload's origin).")
        var origin: String = "DE"
        @Option(help: "Countries visited, comma-separated (the origin is always added).")
        var visited: String = ""

        func run() async throws {
            // 30 encrypted check-ins and 14 keys still fit into the 4 KB every payload is padded to.
            guard (0...SubmissionBuilder.maximumCheckIns).contains(self.checkins) else {
                throw ValidationError("--checkins must be 0…\(SubmissionBuilder.maximumCheckIns)")
            }
            var state = try self.phone.load()
            let now = Date()
            let outcome = try await withGateway(try self.gateway.client()) { client in
                if self.fake {
                    return (
                        try await SubmissionCalls.fake(
                            client: client,
                            app: self.gateway.app,
                            payload: try SubmissionBuilder.withRandomKeys(now: now)
                        ), ""
                    )
                }
                let tan: String
                if self.reuseTAN {
                    guard let last = state.lastTAN else { throw ClientFailure("this phone has not submitted yet") }
                    tan = last
                } else {
                    guard let token = state.registrationToken else {
                        throw ClientFailure("no registered test (cwa phone register first)")
                    }
                    tan = try await SubmissionCalls.tan(client: client, app: self.gateway.app, registrationToken: token)
                }
                let payload = try SubmissionBuilder.payload(
                    keys: state.keys,
                    checkIns: self.checkins,
                    now: now,
                    rapidTest: self.rapid,
                    origin: self.origin,
                    visited: self.visited.split(separator: ",").map(String.init)
                )
                return (
                    try await SubmissionCalls.submit(client: client, app: self.gateway.app, tan: tan, payload: payload),
                    tan
                )
            }
            let (reply, tan) = outcome
            if !self.fake && !self.reuseTAN {
                state.lastTAN = tan
                if reply.status == 200 { state.submittedAt = now }
                try self.phone.save(state)
            }
            let kind = self.fake ? "dummy submission" : "submission"
            print(
                "\(kind): HTTP \(reply.status), \(reply.wireSize) bytes, \(String(format: "%.0f", reply.seconds * 1000)) ms"
                    + (reply.header("cwa-saved-checkins").flatMap { Int($0) }.map { ", check-ins saved: \($0)" } ?? "")
            )
            guard reply.status == 200 else { throw ExitCode(3) }
        }
    }

    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Download new key archives, verify them, and look for exposures."
        )

        @OptionGroup var phone: PhoneFile
        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var cdnKey: CDNKeyOptions
        @Option(help: "The country folder to download.")
        var country: String = "DE"
        @Option(
            help: ArgumentHelp(
                "Sync again until an archive holds one of this phone's own submitted keys, for at most this many seconds; then print how long after the submission that was (exit 5 if it never was).",
                valueName: "seconds"
            )
        )
        var wait: Int?
        @Option(help: "Seconds between the syncs of --wait.")
        var interval: Int = 10

        func run() async throws {
            guard (1...86_400).contains(self.wait ?? 1), (1...3600).contains(self.interval) else {
                throw ValidationError("--wait must be 1…86400 and --interval 1…3600 seconds")
            }
            let key = try self.cdnKey.load().key
            var state = try self.phone.load()
            guard let wait = self.wait else {
                try await self.sync(&state, key: key)
                return
            }
            guard let submittedAt = state.submittedAt else {
                throw ClientFailure("this phone has no accepted submission to wait for (cwa phone submit first)")
            }
            let own = Set(state.keys.map(\.keyData))
            let deadline = Date().addingTimeInterval(TimeInterval(wait))
            while true {
                let archives = try await self.sync(&state, key: key)
                if let archive = archives.first(where: { $0.keys.contains { own.contains($0.keyData) } }) {
                    let seconds = Date().timeIntervalSince(submittedAt)
                    print(
                        "own keys published \(String(format: "%.0f", seconds)) s after the submission (\(archive.path))"
                    )
                    return
                }
                guard Date().addingTimeInterval(TimeInterval(self.interval)) < deadline else {
                    print("own keys not published within \(wait) s")
                    throw ExitCode(5)
                }
                try await Task.sleep(for: .seconds(self.interval))
            }
        }

        /// One sync: new archives downloaded and verified, exposures looked for, the state saved; returns the
        /// archives that verified.
        @discardableResult
        private func sync(_ state: inout PhoneState, key: P256.Signing.PublicKey) async throws -> [CDNSync.Archive] {
            let known = Set(state.syncedArchives)
            let outcome = try await withGateway(try self.gateway.client()) { client in
                try await CDNSync(client: client, baseURL: self.gateway.app, country: self.country, publicKey: key)
                    .run(skipping: known, now: Date())
            }
            let keys = outcome.archives.flatMap { archive in
                archive.keys.map {
                    (
                        ExposureKey(
                            keyData: $0.keyData,
                            rollingStartIntervalNumber: UInt32($0.rollingStartIntervalNumber),
                            rollingPeriod: UInt32($0.rollingPeriod)
                        ), Int($0.transmissionRiskLevel), archive.path
                    )
                }
            }
            let matches = Encounter.match(keys: keys, observations: state.observations, known: Set(state.matchedKeys))
            let found = matches.map(\.exposure)
            state.syncedArchives += outcome.archives.map(\.path)
            state.exposures += found
            state.matchedKeys += matches.map(\.keyData)
            try self.phone.save(state)

            let signatures = outcome.archives.reduce(0) { $0 + $1.verifiedSignatures }
            print(
                "synced \(outcome.archives.count) new archives (\(keys.count) keys, \(signatures) signatures verified)"
            )
            for rejected in outcome.rejected { print("REJECTED \(rejected.path): \(rejected.reason)") }
            if found.isEmpty {
                print("no new exposure")
            }
            for exposure in found {
                print(
                    "EXPOSURE on \(exposure.day): \(exposure.minutes) min, lowest attenuation \(exposure.lowestAttenuation) dB, transmission risk level \(exposure.transmissionRiskLevel) (key from \(exposure.archive))"
                )
            }
            if !outcome.rejected.isEmpty { throw ExitCode(4) }
            return outcome.archives
        }
    }
}

/// The calls of a submission: a TAN for the registration, then the upload.
enum SubmissionCalls {
    static func tan(client: GatewayClient, app: String, registrationToken: String) async throws -> String {
        struct Answer: Decodable { var tan: String }
        let reply = try await client.postJSON(
            "\(app)/version/v1/tan",
            jsonObject(["registrationToken": registrationToken]),
            headers: [("cwa-fake", "0")]
        )
        guard reply.status == 201 else { throw ClientFailure("no TAN: HTTP \(reply.status) \(reply.text)") }
        return try decodeJSON(Answer.self, from: reply, what: "TAN").tan
    }

    static func submit(client: GatewayClient, app: String, tan: String, payload: [UInt8]) async throws -> Reply {
        try await client.send(
            .POST,
            "\(app)/version/v1/diagnosis-keys",
            headers: [("Content-Type", "application/x-protobuf"), ("cwa-fake", "0"), ("cwa-authorization", tan)],
            body: payload
        )
    }

    /// A dummy: the same headers with a random TAN, and `payload` (from `SubmissionBuilder.withRandomKeys`, the size
    /// of a real one).
    static func fake(client: GatewayClient, app: String, payload: [UInt8]) async throws -> Reply {
        try await client.send(
            .POST,
            "\(app)/version/v1/diagnosis-keys",
            headers: [
                ("Content-Type", "application/x-protobuf"), ("cwa-fake", "1"),
                ("cwa-authorization", UUID().uuidString.lowercased()),
            ],
            body: payload
        )
    }
}

/// The calls of a test's registration and of polling its result.
enum RegistrationCalls {
    /// The registration token for a GUID's hash or a teleTAN (`keyType` GUID or TELETAN).
    static func register(client: GatewayClient, app: String, key: String, keyType: String) async throws -> String {
        struct Answer: Decodable { var registrationToken: String }
        let reply = try await client.postJSON(
            "\(app)/version/v1/registrationToken",
            jsonObject(["key": key, "keyType": keyType]),
            headers: [("cwa-fake", "0")]
        )
        guard reply.status == 201 else {
            throw ClientFailure("registration refused: HTTP \(reply.status) \(reply.text)")
        }
        return try decodeJSON(Answer.self, from: reply, what: "registration").registrationToken
    }

    static func poll(client: GatewayClient, app: String, registrationToken: String) async throws -> Reply {
        try await client.postJSON(
            "\(app)/version/v1/testresult",
            jsonObject(["registrationToken": registrationToken]),
            headers: [("cwa-fake", "0")]
        )
    }
}

/// The names of the test result codes a phone sees, 0–9 (cwa-satellites §1.7).
enum TestResultName {
    static func of(_ code: Int) -> String {
        guard let result = LabTestResult(code: code), result.kind != .pointOfCareNAT else { return "unknown" }
        return (result.kind == .rapidAntigen ? "rapid test " : "") + "\(result.outcome)"
    }
}
