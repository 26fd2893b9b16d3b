// `cwa officer …`: an officer logging into the portal (password, then the TOTP code) and issuing a teleTAN, minding
// the NHS circuit breakers, or publishing an NHS local-risk list.

import ArgumentParser
import ENCrypto
import Foundation
import NIOHTTP1

struct OfficerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "officer",
        abstract: "A public-health officer at the portal.",
        subcommands: [TeleTANCommand.self, CircuitBreakerCommand.self, LocalRiskCommand.self]
    )
}

enum TeleTANType: String, ExpressibleByArgument, CaseIterable {
    case TEST, EVENT
}

extension OfficerCommand {
    struct TeleTANCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "teletan",
            abstract: "Log in (password and second factor), issue a teleTAN, print it, log out."
        )

        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var login: OfficerLogin
        @Option(help: "TEST or EVENT.")
        var type: TeleTANType = .TEST
        @Option(help: "For EVENT: the health authority's id (default: the first one offered).")
        var authority: String?

        func run() async throws {
            let started = ContinuousClock.now
            let teleTAN = try await self.login.withSession(self.gateway) { session in
                try await session.issue(type: self.type, authority: self.authority)
            }
            let elapsed = ContinuousClock.now - started
            print(teleTAN)
            FileHandle.standardError.write(
                Data(
                    "issued a \(self.type.rawValue) teleTAN as \(try self.login.user()) in \(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow)))\n"
                        .utf8
                )
            )
        }

    }

    struct CircuitBreakerCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "circuit-breaker",
            abstract: "Log in, show the NHS circuit breakers (switch, waiting requests), optionally act, log out.",
            discussion: "Needs the role circuit_breaker_officer. Prints one line per kind after the action."
        )

        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var login: OfficerLogin
        @Option(help: "exposure-notification or venue: the kind --release, --refuse and --switch act on.")
        var kind = "exposure-notification"
        @Flag(help: "Answer every waiting request of the kind yes (and quiet the spike rule for an hour).")
        var release = false
        @Flag(help: "Answer every waiting request of the kind no.")
        var refuse = false
        @Option(name: .customLong("switch"), help: "Set the kind's switch: yes, no or pending.")
        var mode: String?

        func validate() throws {
            guard ["exposure-notification", "venue"].contains(self.kind) else {
                throw ValidationError("--kind must be exposure-notification or venue")
            }
            guard !(self.release && self.refuse) else { throw ValidationError("--release or --refuse, not both") }
            if let mode = self.mode, !["yes", "no", "pending"].contains(mode) {
                throw ValidationError("--switch must be yes, no or pending")
            }
        }

        func run() async throws {
            let lines = try await self.login.withSession(self.gateway) { session in
                if self.release || self.refuse {
                    let answered = try await session.circuitBreakerAction(
                        "/circuit-breakers/resolve",
                        ["kind": self.kind, "approval": self.release ? "yes" : "no"]
                    )
                    print("answered \(Self.element("resolved", answered) ?? "?") waiting \(self.kind) requests")
                }
                if let mode = self.mode {
                    _ = try await session.circuitBreakerAction(
                        "/circuit-breakers/switch",
                        ["kind": self.kind, "mode": mode]
                    )
                    print("\(self.kind) switch set to \(mode)")
                }
                return try await session.circuitBreakerSummary()
            }
            for line in lines { print(line) }
        }

        static func element(_ id: String, _ text: String) -> String? {
            PortalBrowserSession.element(id, in: text).map { $0.split(separator: " ").last.map(String.init) ?? $0 }
        }
    }
}

extension OfficerCommand {
    struct LocalRiskCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "local-risk",
            abstract: "Log in, upload an NHS list on the venue officer's page, show the preview, publish it, log out.",
            discussion: """
                Needs the role venue_officer. Prints the preview's counts and every entry with a problem; publishes \
                only a list without problems (exit status 1 otherwise), unless --preview-only.
                """
        )

        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var login: OfficerLogin
        @Option(help: "risky-venues (a CSV) or risky-post-districts (JSON).")
        var list = "risky-venues"
        @Flag(name: .customLong("preview-only"), help: "Show the preview; publish nothing.")
        var previewOnly = false
        @Argument(help: "The file to upload ('-': standard input).")
        var file: String

        func validate() throws {
            guard ["risky-venues", "risky-post-districts"].contains(self.list) else {
                throw ValidationError("--list must be risky-venues or risky-post-districts")
            }
        }

        func run() async throws {
            let bytes: [UInt8]
            if self.file == "-" {
                bytes = Array(FileHandle.standardInput.readDataToEndOfFile())
            } else {
                guard let data = FileManager.default.contents(atPath: self.file) else {
                    throw ClientFailure("cannot read \(self.file)")
                }
                bytes = Array(data)
            }
            let published = try await self.login.withSession(self.gateway) { session in
                let preview = try await session.localRiskPreview(list: self.list, file: bytes)
                if let problem = PortalBrowserSession.element("upload-problem", in: preview.text) {
                    print(problem)
                    return false
                }
                let entries = PortalBrowserSession.element("entries", in: preview.text) ?? "?"
                let problems = PortalBrowserSession.element("problems", in: preview.text) ?? "?"
                print("preview: \(entries) entries, \(problems) with problems")
                for line in PortalBrowserSession.problemRows(in: preview.text) { print("  \(line)") }
                guard problems == "0", !self.previewOnly else { return problems == "0" }
                try await session.localRiskPublish(preview: preview.text)
                print("published \(self.list): \(entries) entries")
                return true
            }
            if !published { throw ExitCode(1) }
        }
    }
}

/// The officer's login: the portal's address, the user name, the password and second-factor files.
struct OfficerLogin: ParsableArguments {
    @Option(name: .customLong("portal-url"), help: "The gateway's portal server (env CWA_PORTAL_URL).")
    var portalURL: String = environment("CWA_PORTAL_URL", "https://127.0.0.1:8445")!
    @Option(name: .customLong("user"), help: "The officer's user name (env CWA_OFFICER_USER).")
    var userOption: String?
    @Option(name: .customLong("password-file"), help: "A file holding the password (env CWA_OFFICER_PASSWORD_FILE).")
    var passwordFileOption: String?
    @Option(
        name: .customLong("totp-file"),
        help: "A file holding the otpauth:// URI of the second factor (env CWA_OFFICER_TOTP_FILE)."
    )
    var totpFileOption: String?

    func user() throws -> String {
        guard let user = self.userOption ?? environment("CWA_OFFICER_USER") else {
            throw ValidationError("--user (or CWA_OFFICER_USER) is required")
        }
        return user
    }

    /// Logs in, runs `body` with the session, logs out.
    func withSession<Result: Sendable>(
        _ gateway: GatewayOptions,
        _ body: @escaping (PortalBrowserSession) async throws -> Result
    ) async throws -> Result {
        let user = try self.user()
        let password = try Self.firstLine(
            of: self.passwordFileOption ?? environment("CWA_OFFICER_PASSWORD_FILE"),
            what: "--password-file (or CWA_OFFICER_PASSWORD_FILE)"
        )
        let totpFile = self.totpFileOption ?? environment("CWA_OFFICER_TOTP_FILE")
        let uri = try Self.firstLine(of: totpFile, what: "--totp-file (or CWA_OFFICER_TOTP_FILE)")
        guard let totp = TOTP(uri: uri) else {
            throw ClientFailure("the second-factor file does not hold an otpauth://totp/ URI with a secret")
        }
        return try await withGateway(try gateway.client()) { client in
            let session = PortalBrowserSession(client: client, base: self.portalURL.trimmingSuffix("/"))
            try await session.logIn(
                user: user,
                password: password,
                totp: totp,
                usedSteps: totpFile.map { UsedTOTPSteps(file: $0 + ".used") }
            )
            let result = try await body(session)
            try await session.logOut()
            return result
        }
    }

    static func firstLine(of file: String?, what: String) throws -> String {
        guard let file else { throw ValidationError("\(what) is required") }
        guard let text = try? String(contentsOfFile: file, encoding: .utf8),
            let line = text.split(whereSeparator: \.isNewline).first.map(String.init), !line.isEmpty
        else { throw ClientFailure("cannot read \(file)") }
        return line
    }
}

/// A browser session at the portal: the session cookie, the CSRF token of the last page, form posts.
final class PortalBrowserSession {
    let client: GatewayClient
    let base: String
    private var cookie: String?
    private var csrf: String?

    init(client: GatewayClient, base: String) {
        self.client = client
        self.base = base
    }

    /// Logs in with the password and the current TOTP code. A code works once per 30-second step, so a step the
    /// last command used (`usedSteps`) is waited out first, and a refused code is tried once more in the next step;
    /// each wait is said on standard error.
    func logIn(user: String, password: String, totp: TOTP, usedSteps: UsedTOTPSteps? = nil) async throws {
        if let used = usedSteps?.last, used >= TOTP.step(at: Date()) {
            try await Self.waitForNextStep("the current second-factor code was used by the last command")
        }
        try await self.page("/login")
        let afterPassword = try await self.post("/login", ["username": user, "password": password])
        guard afterPassword.header("Location") == "/totp" else {
            throw ClientFailure("the portal refused the user name or password")
        }
        for attempt in 0..<2 {
            try await self.page("/totp")
            let step = TOTP.step(at: Date())
            let afterCode = try await self.post("/totp", ["code": totp.code(step: step)])
            usedSteps?.record(step)
            if afterCode.header("Location") == "/" { return }
            if attempt == 0 { try await Self.waitForNextStep("the portal refused the second-factor code") }
        }
        throw ClientFailure("the portal refused the second-factor code")
    }

    private static func waitForNextStep(_ reason: String) async throws {
        let wait = TOTP.stepSeconds - Int64(Date().timeIntervalSince1970) % TOTP.stepSeconds + 1
        FileHandle.standardError.write(Data("cwa: \(reason); waiting \(wait) s for the next one\n".utf8))
        try await Task.sleep(for: .seconds(wait))
    }

    func issue(type: TeleTANType, authority: String?) async throws -> String {
        let start = try await self.page("/")
        var fields = ["type": type.rawValue]
        if type == .EVENT {
            guard let chosen = authority ?? Self.firstOption(in: start.text) else {
                throw ClientFailure(
                    "the portal offers no health authority (does the officer have the role c19hotline_event?)"
                )
            }
            fields["authority"] = chosen
        }
        let result = try await self.post("/teletan", fields)
        switch result.status {
        case 200:
            guard let teleTAN = Self.element("teletan", in: result.text) else {
                throw ClientFailure("the result page shows no teleTAN")
            }
            return teleTAN
        case 429:
            throw ClientFailure(
                "rate limited: \(Self.element("rate-limited", in: result.text) ?? Self.element("error-message", in: result.text) ?? "HTTP 429")"
            )
        default:
            throw ClientFailure(
                "the portal answered HTTP \(result.status): \(Self.element("error-message", in: result.text) ?? "")"
            )
        }
    }

    /// A circuit-breaker form of the portal: the page first (for its CSRF token), then the post; the page it redirects
    /// to is returned.
    func circuitBreakerAction(_ path: String, _ fields: [String: String]) async throws -> String {
        try await self.page("/circuit-breakers")
        let reply = try await self.post(path, fields)
        guard reply.status == 303, let location = reply.header("Location") else {
            throw ClientFailure(
                "the portal answered HTTP \(reply.status): \(Self.element("error-message", in: reply.text) ?? "")"
            )
        }
        return try await self.page(location).text
    }

    /// One line per kind of the circuit-breaker page: `<kind> switch <mode>, <n> waiting`.
    func circuitBreakerSummary() async throws -> [String] {
        let page = try await self.page("/circuit-breakers").text
        return ["exposure-notification", "venue"].map { kind in
            let mode = Self.element("switch-\(kind)", in: page) ?? "?"
            return "\(kind) switch \(mode), \(Self.element("pending-\(kind)", in: page) ?? "?") waiting"
        }
    }

    /// The venue officer's preview of `file` as the list `list` (multipart upload, as the page's form sends it).
    func localRiskPreview(list: String, file: [UInt8]) async throws -> Reply {
        try await self.page("/local-risk")
        let boundary = "----cwa-\(UUID().uuidString)"
        var body: [UInt8] = []
        for (name, value) in [("csrf", self.csrf ?? ""), ("list", list)] {
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
        }
        body += Array(
            ("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\(list)\"\r\n"
                + "Content-Type: application/octet-stream\r\n\r\n").utf8
        )
        body += file + Array("\r\n--\(boundary)--\r\n".utf8)
        let reply = try await self.client.send(
            .POST,
            self.base + "/local-risk/preview",
            headers: self.cookieHeader + [("Content-Type", "multipart/form-data; boundary=\(boundary)")],
            body: body
        )
        self.absorb(reply)
        guard reply.status == 200 || reply.status == 422 else {
            throw ClientFailure(
                "the portal answered HTTP \(reply.status): \(Self.element("error-message", in: reply.text) ?? "")"
            )
        }
        return reply
    }

    /// Confirms a preview: posts its hidden fields back, expecting the redirect to the upload page.
    func localRiskPublish(preview: String) async throws {
        guard let list = Self.attribute(after: #"name="list" value=""#, in: preview),
            let content = Self.attribute(after: #"name="content" value=""#, in: preview)
        else { throw ClientFailure("the preview offers no confirmation") }
        let reply = try await self.post("/local-risk/publish", ["list": list, "content": content])
        guard reply.status == 303, reply.header("Location")?.hasPrefix("/local-risk?published=") == true else {
            throw ClientFailure(
                "the portal answered HTTP \(reply.status): \(Self.element("error-message", in: reply.text) ?? "")"
                    + " \(Self.element("error-detail", in: reply.text) ?? "")"
            )
        }
    }

    /// `<row>: <problem>` for every row the preview marks as bad.
    static func problemRows(in text: String) -> [String] {
        var rows: [String] = []
        var rest = Substring(text)
        while let range = rest.range(of: #"<tr class="bad" id="row-"#) {
            let number = rest[range.upperBound...].prefix { $0 != "\"" }
            let rowEnd = rest[range.upperBound...].range(of: "</tr>")?.lowerBound ?? rest.endIndex
            let row = rest[range.upperBound..<rowEnd]
            let problem = row.range(of: "<td>", options: .backwards).map { String(row[$0.upperBound...]) } ?? ""
            var plain = problem.replacingOccurrences(of: "</td>", with: "")
            for (entity, character) in [("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&#39;", "'"), ("&amp;", "&")]
            {
                plain = plain.replacingOccurrences(of: entity, with: character)
            }
            rows.append("row \(number): \(plain)")
            rest = rest[rowEnd...]
        }
        return rows
    }

    func logOut() async throws {
        _ = try await self.post("/logout", [:])
    }

    // MARK: - Plumbing

    @discardableResult
    private func page(_ path: String) async throws -> Reply {
        let reply = try await self.client.send(.GET, self.base + path, headers: self.cookieHeader)
        self.absorb(reply)
        guard reply.status == 200 else { throw ClientFailure("GET \(path): HTTP \(reply.status)") }
        return reply
    }

    private func post(_ path: String, _ fields: [String: String]) async throws -> Reply {
        var pairs = [("csrf", self.csrf ?? "")]
        pairs += fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let body = pairs.map { "\(Self.formEncoded($0.0))=\(Self.formEncoded($0.1))" }.joined(separator: "&")
        let reply = try await self.client.send(
            .POST,
            self.base + path,
            headers: self.cookieHeader + [("Content-Type", "application/x-www-form-urlencoded")],
            body: Array(body.utf8)
        )
        self.absorb(reply)
        return reply
    }

    private var cookieHeader: [(String, String)] {
        self.cookie.map { [("Cookie", "portal_session=\($0)")] } ?? []
    }

    private func absorb(_ reply: Reply) {
        for value in reply.headers("Set-Cookie") {
            let pair = value.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            guard pair.hasPrefix("portal_session=") else { continue }
            let token = String(pair.dropFirst("portal_session=".count))
            self.cookie = token.isEmpty || value.contains("Max-Age=0") ? nil : token
        }
        if let token = Self.attribute(after: #"name="csrf" value=""#, in: reply.text) { self.csrf = token }
    }

    static func attribute(after marker: String, in text: String) -> String? {
        guard let range = text.range(of: marker) else { return nil }
        return String(text[range.upperBound...].prefix { $0 != "\"" })
    }

    /// The text of the element with `id` (child elements' text included, their tags dropped), e.g. "wait 20 seconds"
    /// of `<p id="x">wait <strong>20</strong> seconds</p>`.
    static func element(_ id: String, in text: String) -> String? {
        guard let attribute = text.range(of: #"id="\#(id)""#),
            let open = text[..<attribute.lowerBound].lastIndex(of: "<"),
            let close = text[attribute.upperBound...].firstIndex(of: ">")
        else { return nil }
        let tag = text[text.index(after: open)...].prefix { $0.isLetter || $0.isNumber }
        let inner = text[text.index(after: close)...]
        let body = inner.range(of: "</\(tag)>").map { inner[..<$0.lowerBound] } ?? inner
        var plain = ""
        var inTag = false
        for character in body {
            if character == "<" {
                inTag = true
            } else if character == ">" {
                inTag = false
            } else if !inTag {
                plain.append(character)
            }
        }
        let content = plain.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return content.isEmpty ? nil : content
    }

    /// The first non-empty `<option value>` of the page.
    static func firstOption(in text: String) -> String? {
        var rest = Substring(text)
        while let range = rest.range(of: #"<option value=""#) {
            let value = String(rest[range.upperBound...].prefix { $0 != "\"" })
            if !value.isEmpty { return value }
            rest = rest[range.upperBound...]
        }
        return nil
    }

    static func formEncoded(_ text: String) -> String {
        text.addingPercentEncoding(
            withAllowedCharacters: CharacterSet(
                charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
            )
        ) ?? ""
    }
}

/// The last TOTP step this client sent, kept in a file beside the second-factor file (`<totp-file>.used`), so that
/// the next command does not send the same, spent code. A file that cannot be read or written is no step.
struct UsedTOTPSteps {
    let file: String

    var last: Int64? {
        (try? String(contentsOfFile: self.file, encoding: .utf8)).flatMap {
            Int64($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    func record(_ step: Int64) {
        try? "\(step)\n".write(toFile: self.file, atomically: true, encoding: .utf8)
    }
}
