// A minimal browser for the portal's server-rendered pages: the session cookie, the CSRF token, form posts.

import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import Testing

@testable import PortalService

/// What the portal answered, with the few things tests read from a page.
struct PortalReply: Sendable {
    let status: HTTPResponse.Status
    let headers: HTTPFields
    let text: String

    var location: String? { self.headers[.location] }
    var setCookies: [String] { self.headers[values: .setCookie] }

    /// The CSRF token of the page's forms, if it has any.
    var csrf: String? {
        guard let start = self.text.range(of: #"name="csrf" value=""#) else { return nil }
        return String(self.text[start.upperBound...].prefix { $0 != "\"" })
    }

    /// Whether an element with this `id` is on the page.
    func has(id: String) -> Bool { self.text.contains(#"id="\#(id)""#) }

    /// The text of the element with `id`, up to its first child element or its end.
    func content(ofID id: String) -> String? {
        guard let start = self.text.range(of: #"id="\#(id)""#),
            let close = self.text[start.upperBound...].firstIndex(of: ">")
        else {
            return nil
        }
        return String(self.text[self.text.index(after: close)...].prefix { $0 != "<" })
    }

    /// The page with its CSRF token removed, to compare two renderings.
    var withoutCSRF: String { self.csrf.map { self.text.replacingOccurrences(of: $0, with: "") } ?? self.text }
}

/// Keeps the `portal_session` cookie as a browser does (every `Set-Cookie` replaces or expires it), remembers the
/// CSRF token of the last page that had one, and sends form posts. It follows no redirects: tests see each 303.
final class PortalBrowser {
    typealias Transport = (HTTPRequest.Method, String, HTTPFields, ByteBuffer?) async throws -> PortalReply

    /// Which CSRF token a post carries.
    enum CSRF {
        /// The one of the last page.
        case page
        case missing
        /// A well-formed token of no session.
        case forged
    }

    private let transport: Transport
    /// Sent with every request (`Host`, `Accept-Language`, `X-Forwarded-Host`).
    var extraHeaders: HTTPFields = [:]
    private(set) var cookie: String?
    private(set) var csrf: String?

    init(transport: @escaping Transport, cookie: String? = nil, csrf: String? = nil) {
        self.transport = transport
        self.cookie = cookie
        self.csrf = csrf
    }

    /// A browser on HummingbirdTesting's client (whose requests always carry the authority `localhost`).
    convenience init(client: any TestClientProtocol, cookie: String? = nil, csrf: String? = nil) {
        self.init(
            transport: { method, path, headers, body in
                let response = try await client.execute(uri: path, method: method, headers: headers, body: body)
                return PortalReply(
                    status: response.status,
                    headers: response.headers,
                    text: String(buffer: response.body)
                )
            },
            cookie: cookie,
            csrf: csrf
        )
    }

    /// A browser on a real socket that sends `Host: host` (AsyncHTTPClient keeps a `Host` it is given). `client` must
    /// not follow redirects.
    static func live(port: Int, client: HTTPClient, host: String) -> PortalBrowser {
        let browser = PortalBrowser(transport: { method, path, headers, body in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
            request.method = method == .post ? .POST : .GET
            for field in headers {
                request.headers.add(name: field.name.rawName, value: field.value)
            }
            if let body { request.body = .bytes(body) }
            let response = try await client.execute(request, timeout: .seconds(30))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            var fields = HTTPFields()
            for header in response.headers {
                if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
            }
            return PortalReply(
                status: HTTPResponse.Status(code: Int(response.status.code)),
                headers: fields,
                text: String(buffer: bytes)
            )
        })
        browser.extraHeaders[PortalBrowser.host] = host
        return browser
    }

    static let host = HTTPField.Name("Host")!
    static let forwardedHost = HTTPField.Name("X-Forwarded-Host")!

    // MARK: - Requests

    func get(_ path: String) async throws -> PortalReply {
        try await self.send(.get, path, body: nil)
    }

    /// Posts a form with the CSRF token `csrf` (first) and `fields`.
    func post(
        _ path: String,
        _ fields: KeyValuePairs<String, String> = [:],
        csrf: CSRF = .page
    ) async throws -> PortalReply {
        var pairs: [(String, String)] = []
        switch csrf {
        case .page: pairs.append(("csrf", self.csrf ?? ""))
        case .missing: break
        case .forged: pairs.append(("csrf", PortalEngine.randomToken()))
        }
        for (name, value) in fields {
            pairs.append((name, value))
        }
        let body = pairs.map { "\(Self.formEncoded($0.0))=\(Self.formEncoded($0.1))" }.joined(separator: "&")
        return try await self.send(.post, path, body: ByteBuffer(string: body))
    }

    /// Posts a multipart/form-data form, as a browser sends a file input: the page's CSRF token, `fields`, and the
    /// file's bytes as the part `file`.
    func upload(
        _ path: String,
        _ fields: KeyValuePairs<String, String> = [:],
        file: [UInt8],
        filename: String = "list.csv",
        csrf: CSRF = .page
    ) async throws -> PortalReply {
        let boundary = "----portal-test-\(UUID().uuidString)"
        var body: [UInt8] = []
        var pairs: [(String, String)] = []
        switch csrf {
        case .page: pairs.append(("csrf", self.csrf ?? ""))
        case .missing: break
        case .forged: pairs.append(("csrf", PortalEngine.randomToken()))
        }
        pairs += fields.map { ($0.key, $0.value) }
        for (name, value) in pairs {
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
        }
        body += Array(
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\(filename)\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                .utf8
        )
        body += file + Array("\r\n--\(boundary)--\r\n".utf8)
        return try await self.send(
            .post,
            path,
            body: ByteBuffer(bytes: body),
            contentType: "multipart/form-data; boundary=\(boundary)"
        )
    }

    /// A GET with `cookie` instead of the browser's own (an old or stolen cookie); the browser's state is untouched.
    func probe(_ path: String, cookie: String) async throws -> PortalReply {
        var headers = self.extraHeaders
        headers[.cookie] = "\(SessionMiddleware.cookieName)=\(cookie)"
        return try await self.transport(.get, path, headers, nil)
    }

    private func send(
        _ method: HTTPRequest.Method,
        _ path: String,
        body: ByteBuffer?,
        contentType: String = "application/x-www-form-urlencoded"
    ) async throws -> PortalReply {
        var headers = self.extraHeaders
        if let cookie = self.cookie { headers[.cookie] = "\(SessionMiddleware.cookieName)=\(cookie)" }
        if body != nil { headers[.contentType] = contentType }
        let reply = try await self.transport(method, path, headers, body)
        self.absorb(reply)
        return reply
    }

    /// Takes the session cookie from `Set-Cookie` (an empty value or `Max-Age=0` deletes it) and the page's token.
    private func absorb(_ reply: PortalReply) {
        for value in reply.setCookies {
            let pair = value.split(separator: ";", maxSplits: 1).first.map { String($0) } ?? ""
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == SessionMiddleware.cookieName else { continue }
            let expired = parts[1].isEmpty || value.contains("Max-Age=0")
            self.cookie = expired ? nil : String(parts[1])
        }
        if let csrf = reply.csrf { self.csrf = csrf }
    }

    /// application/x-www-form-urlencoded: everything but unreserved ASCII percent-encoded (so `+` stays `+`).
    private static func formEncoded(_ text: String) -> String {
        let unreserved = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
        )
        return text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    // MARK: - Journeys

    /// A fresh login page, then the password form.
    func submitPassword(_ username: String, _ password: String) async throws -> PortalReply {
        let page = try await self.get("/login")
        try #require(page.status == .ok, "GET /login answered \(page.status)")
        return try await self.post("/login", ["username": username, "password": password])
    }

    /// Password, second-factor page and code; ends on the start page. Every step must succeed.
    @discardableResult
    func signIn(_ username: String, password: String, code: String) async throws -> PortalReply {
        let afterPassword = try await self.submitPassword(username, password)
        try #require(
            afterPassword.location == "/totp",
            "the password step answered \(afterPassword.status) \(afterPassword.location ?? "")"
        )
        let totpPage = try await self.get("/totp")
        try #require(totpPage.status == .ok, "GET /totp answered \(totpPage.status)")
        let afterCode = try await self.post("/totp", ["code": code])
        try #require(
            afterCode.location == "/",
            "the second factor answered \(afterCode.status) \(afterCode.location ?? "")"
        )
        let start = try await self.get("/")
        try #require(start.status == .ok, "GET / answered \(start.status)")
        return start
    }
}
