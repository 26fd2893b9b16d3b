// AWS Signature Version 4 for S3-compatible storage: the Authorization header of one request, payload hash signed.

import Crypto
import ENCrypto
import Foundation

/// Signs a request with AWS Signature Version 4 in the `Authorization` header, the payload hash included
/// (AWS S3 API reference, "Signature Calculations for the Authorization Header: Transferring Payload in a Single
/// Chunk"). Pure: the same request, date and credentials always give the same headers.
struct SigV4Signer: Sendable, CustomStringConvertible {
    let accessKeyID: String
    private let secretAccessKey: String
    let region: String
    let service: String

    /// Lowercase hex SHA-256 of an empty payload, for requests without a body.
    static let emptyPayloadSHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    init(accessKeyID: String, secretAccessKey: String, region: String, service: String = "s3") {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.region = region
        self.service = service
    }

    /// Never shows the secret key.
    var description: String { "SigV4Signer(\(self.accessKeyID), \(self.region)/\(self.service))" }

    /// The headers to add to the request: `x-amz-date`, `x-amz-content-sha256` and `Authorization`.
    ///
    /// `headers` are the request's other headers, all of them signed (names in any case; give `Content-Length` only
    /// if the client will not rewrite it). `host` is `SigV4Signer.host(of: url)` unless `headers` holds one; the
    /// request must then send that very `Host`. `payloadSHA256` is the lowercase hex SHA-256 of the body.
    func sign(
        method: String,
        url: URL,
        headers: [(String, String)],
        payloadSHA256: String,
        date: Date
    ) -> [(String, String)] {
        let timestamp = Self.timestamp(date)
        let canonical = self.canonicalRequest(
            method: method,
            url: url,
            headers: headers,
            payloadSHA256: payloadSHA256,
            timestamp: timestamp
        )
        let scope = self.scope(timestamp: timestamp)
        let stringToSign = self.stringToSign(canonicalRequest: canonical.text, timestamp: timestamp)
        let key = self.signingKey(timestamp: timestamp)
        let signature = Hex.encode(HMAC<SHA256>.authenticationCode(for: Array(stringToSign.utf8), using: key))
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(self.accessKeyID)/\(scope),SignedHeaders=\(canonical.signedHeaders),Signature=\(signature)"
        return [("x-amz-date", timestamp), ("x-amz-content-sha256", payloadSHA256), ("Authorization", authorization)]
    }

    // MARK: - The steps, visible to tests

    /// The canonical request (method, URI, query, headers, signed header names, payload hash) and the signed header
    /// names (`host;range;x-amz-content-sha256;x-amz-date`).
    func canonicalRequest(
        method: String,
        url: URL,
        headers: [(String, String)],
        payloadSHA256: String,
        timestamp: String
    ) -> (text: String, signedHeaders: String) {
        var values: [String: [String]] = [:]
        for (name, value) in headers {
            values[name.lowercased(), default: []].append(Self.normalizedHeaderValue(value))
        }
        if values["host"] == nil {
            values["host"] = [Self.host(of: url)]
        }
        values["x-amz-date"] = [timestamp]
        values["x-amz-content-sha256"] = [payloadSHA256]
        let names = values.keys.sorted(by: Self.precedesBytewise)
        // Each header line ends in a newline, so the block is followed by an empty line in the canonical request.
        let headerBlock = names.map { "\($0):\(values[$0, default: []].joined(separator: ","))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")
        let text = [
            method.uppercased(),
            Self.canonicalURI(of: url),
            Self.canonicalQuery(of: url),
            headerBlock,
            signedHeaders,
            payloadSHA256,
        ].joined(separator: "\n")
        return (text, signedHeaders)
    }

    /// `AWS4-HMAC-SHA256`, the timestamp, the credential scope and the hex SHA-256 of the canonical request.
    func stringToSign(canonicalRequest: String, timestamp: String) -> String {
        let hash = Hex.encode(SHA256.hash(data: Array(canonicalRequest.utf8)))
        return ["AWS4-HMAC-SHA256", timestamp, self.scope(timestamp: timestamp), hash].joined(separator: "\n")
    }

    /// `20130524/us-east-1/s3/aws4_request`.
    func scope(timestamp: String) -> String {
        "\(timestamp.prefix(8))/\(self.region)/\(self.service)/aws4_request"
    }

    /// HMAC-SHA256 chained over the day, region, service and `aws4_request`, starting from `"AWS4" + secret`.
    private func signingKey(timestamp: String) -> SymmetricKey {
        var key = SymmetricKey(data: Array("AWS4\(self.secretAccessKey)".utf8))
        for part in [String(timestamp.prefix(8)), self.region, self.service, "aws4_request"] {
            key = SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Array(part.utf8), using: key))
        }
        return key
    }

    // MARK: - Canonical forms

    private static let timestampStyle = Date.ISO8601FormatStyle(
        dateSeparator: .omitted,
        dateTimeSeparator: .standard,
        timeSeparator: .omitted
    )

    /// `20130524T000000Z`: the `x-amz-date` form, in UTC.
    static func timestamp(_ date: Date) -> String {
        self.timestampStyle.format(date)
    }

    /// The `Host` value the signature covers: the URL's host, with the port unless it is the scheme's default.
    static func host(of url: URL) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        var host = components?.host ?? ""
        if host.contains(":") && !host.hasPrefix("[") {
            host = "[\(host)]"
        }
        let defaultPort = components?.scheme?.lowercased() == "https" ? 443 : 80
        if let port = components?.port, port != defaultPort {
            host += ":\(port)"
        }
        return host
    }

    /// The path with every segment encoded by S3's rules (once: S3 does not double-encode), `/` for an empty path.
    static func canonicalURI(of url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
        guard !path.isEmpty else { return "/" }
        return path.split(separator: "/", omittingEmptySubsequences: false)
            .map { self.uriEncode(self.percentDecoded($0), keepSlash: false) }
            .joined(separator: "/")
    }

    /// The query's parameters, names and values encoded, sorted by name then value; a bare name becomes `name=`.
    static func canonicalQuery(of url: URL) -> String {
        guard let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery, !query.isEmpty
        else {
            return ""
        }
        let pairs = query.split(separator: "&").map { item -> (name: String, value: String) in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = self.uriEncode(self.percentDecoded(parts[0]), keepSlash: false)
            let value = parts.count > 1 ? self.uriEncode(self.percentDecoded(parts[1]), keepSlash: false) : ""
            return (name, value)
        }
        let sorted = pairs.sorted { left, right in
            left.name == right.name
                ? self.precedesBytewise(left.value, right.value) : self.precedesBytewise(left.name, right.name)
        }
        return sorted.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }

    private static let upperHexDigits = Array("0123456789ABCDEF".utf8)

    /// S3's `UriEncode`: the unreserved characters `A-Z a-z 0-9 - _ . ~` stay, `/` stays if `keepSlash`, every other
    /// UTF-8 byte becomes `%XX` with upper-case hex.
    static func uriEncode(_ text: some StringProtocol, keepSlash: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if self.isUnreserved(byte) || (keepSlash && byte == UInt8(ascii: "/")) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(self.upperHexDigits[Int(byte >> 4)])
                out.append(self.upperHexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    /// The text with `%XX` sequences decoded; malformed text is taken as it is.
    private static func percentDecoded(_ text: Substring) -> String {
        String(text).removingPercentEncoding ?? String(text)
    }

    /// Trimmed, with runs of spaces inside collapsed to one.
    private static func normalizedHeaderValue(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    /// Byte order of the UTF-8 forms, as SigV4 sorts.
    private static func precedesBytewise(_ left: String, _ right: String) -> Bool {
        left.utf8.lexicographicallyPrecedes(right.utf8)
    }
}
