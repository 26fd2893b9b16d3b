// `cwa officer teletan`: an officer logging into the portal (password, then the TOTP code) and issuing a teleTAN.

import ArgumentParser
import ENCrypto
import Foundation
import NIOHTTP1

struct OfficerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "officer",
        abstract: "A public-health officer at the portal.",
        subcommands: [TeleTANCommand.self]
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
        @Option(name: .customLong("portal-url"), help: "The gateway's portal server (env CWA_PORTAL_URL).")
        var portalURL: String = environment("CWA_PORTAL_URL", "https://127.0.0.1:8445")!
        @Option(name: .customLong("user"), help: "The officer's user name (env CWA_OFFICER_USER).")
        var userOption: String?
        @Option(
            name: .customLong("password-file"),
            help: "A file holding the password (env CWA_OFFICER_PASSWORD_FILE)."
        )
        var passwordFileOption: String?
        @Option(
            name: .customLong("totp-file"),
            help: "A file holding the otpauth:// URI of the second factor (env CWA_OFFICER_TOTP_FILE)."
        )
        var totpFileOption: String?
        @Option(help: "TEST or EVENT.")
        var type: TeleTANType = .TEST
        @Option(help: "For EVENT: the health authority's id (default: the first one offered).")
        var authority: String?

        func run() async throws {
            guard let user = self.userOption ?? environment("CWA_OFFICER_USER") else {
                throw ValidationError("--user (or CWA_OFFICER_USER) is required")
            }
            let password = try Self.firstLine(
                of: self.passwordFileOption ?? environment("CWA_OFFICER_PASSWORD_FILE"),
                what: "--password-file (or CWA_OFFICER_PASSWORD_FILE)"
            )
            let uri = try Self.firstLine(
                of: self.totpFileOption ?? environment("CWA_OFFICER_TOTP_FILE"),
                what: "--totp-file (or CWA_OFFICER_TOTP_FILE)"
            )
            guard let totp = TOTP(uri: uri) else {
                throw ClientFailure("the second-factor file does not hold an otpauth://totp/ URI with a secret")
            }
            let client = try self.gateway.client()
            let started = ContinuousClock.now
            let teleTAN = try await withGateway(client) { client in
                let session = PortalBrowserSession(client: client, base: self.portalURL.trimmingSuffix("/"))
                try await session.logIn(user: user, password: password, totp: totp)
                let issued = try await session.issue(type: self.type, authority: self.authority)
                try await session.logOut()
                return issued
            }
            let elapsed = ContinuousClock.now - started
            print(teleTAN)
            FileHandle.standardError.write(
                Data(
                    "issued a \(self.type.rawValue) teleTAN as \(user) in \(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow)))\n"
                        .utf8
                )
            )
        }

        static func firstLine(of file: String?, what: String) throws -> String {
            guard let file else { throw ValidationError("\(what) is required") }
            guard let text = try? String(contentsOfFile: file, encoding: .utf8),
                let line = text.split(whereSeparator: \.isNewline).first.map(String.init), !line.isEmpty
            else { throw ClientFailure("cannot read \(file)") }
            return line
        }
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

    func logIn(user: String, password: String, totp: TOTP) async throws {
        try await self.page("/login")
        let afterPassword = try await self.post("/login", ["username": user, "password": password])
        guard afterPassword.header("Location") == "/totp" else {
            throw ClientFailure("the portal refused the user name or password")
        }
        // A code works once per 30-second step: a second try waits for the next step.
        for attempt in 0..<2 {
            try await self.page("/totp")
            let afterCode = try await self.post("/totp", ["code": totp.code(step: TOTP.step(at: Date()))])
            if afterCode.header("Location") == "/" { return }
            if attempt == 0 {
                let wait = TOTP.stepSeconds - Int64(Date().timeIntervalSince1970) % TOTP.stepSeconds + 1
                try await Task.sleep(for: .seconds(wait))
            }
        }
        throw ClientFailure("the portal refused the second-factor code")
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
