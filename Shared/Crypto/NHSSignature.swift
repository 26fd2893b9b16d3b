// The signatures of the NHS API family (nhs §2): answers bound to their request, and distributed files.

package import Crypto
package import Foundation

/// Signs NHS answers and files with ECDSA P-256 over SHA-256 (a DER signature in padded Base64), as the reference's
/// KMS key does. Several keys may be configured for rotation: the first signs, and its id goes into every signature so
/// the apps pick the public key they hold under that id.
package struct NHSSigner: Sendable {
    package struct Key: Sendable {
        package let id: String
        package let key: P256.Signing.PrivateKey

        package init(id: String, key: P256.Signing.PrivateKey) {
            self.id = id
            self.key = key
        }

        /// The key of a PEM EC P-256 private key (SEC 1 or PKCS#8), or nil.
        package init?(id: String, pem: String) {
            guard let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else { return nil }
            self.init(id: id, key: key)
        }
    }

    /// The signing key first, then keys kept for their ids only (none of them signs).
    package let keys: [Key]

    package init(keys: [Key]) {
        precondition(!keys.isEmpty, "an NHSSigner needs a key")
        self.keys = keys
    }

    /// The signing key.
    package var current: Key { self.keys[0] }

    /// The pair of headers of one signature: `X-Amz-Meta-Signature` and `X-Amz-Meta-Signature-Date`.
    package struct Headers: Sendable, Equatable {
        /// `keyId="<id>",signature="<Base64 DER>"`.
        package var signature: String
        /// `EEE, dd MMM yyyy HH:mm:ss UTC`, the signing time.
        package var date: String
    }

    /// Signs an answer: `<Request-Id>:<METHOD>:<path>:<date>:` then the body (nhs §2). A request without a
    /// `Request-Id` signs `not-set`; the path has no host and no query.
    package func signAnswer(
        requestID: String?,
        method: String,
        path: String,
        body: some Sequence<UInt8>,
        at date: Date
    ) throws -> Headers {
        let dateText = Self.dateText(date)
        return try self.sign(
            Self.answerBytes(requestID: requestID, method: method, path: path, date: dateText, body: body),
            date: dateText
        )
    }

    /// Signs a distributed file: `<date>:` then the file's bytes (nhs §2, `DistributionSignature`).
    package func signFile(_ bytes: some Sequence<UInt8>, at date: Date) throws -> Headers {
        let dateText = Self.dateText(date)
        return try self.sign(Array((dateText + ":").utf8) + Array(bytes), date: dateText)
    }

    /// The bytes an answer's signature covers.
    package static func answerBytes(
        requestID: String?,
        method: String,
        path: String,
        date: String,
        body: some Sequence<UInt8>
    ) -> [UInt8] {
        Array("\(requestID ?? "not-set"):\(method):\(path):\(date):".utf8) + Array(body)
    }

    private func sign(_ bytes: [UInt8], date: String) throws -> Headers {
        let signature = try self.current.key.signature(for: SHA256.hash(data: bytes))
        return Headers(
            signature:
                #"keyId="\#(self.current.id)",signature="\#(signature.derRepresentation.base64EncodedString())""#,
            date: date
        )
    }

    /// The Gregorian calendar in UTC, made once: every signed answer is dated, and the NHS family's days (test end
    /// dates, venue windows) are UTC days.
    package static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    /// `Sun, 02 Aug 2020 10:18:44 UTC`: English names, UTC, the zone always printed as `UTC`.
    package static func dateText(_ date: Date) -> String {
        let parts = Self.utc.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int?) -> String {
            let text = String(value ?? 0)
            return text.count < 2 ? "0" + text : text
        }
        let weekday = weekdays[(parts.weekday ?? 1) - 1]
        let month = months[(parts.month ?? 1) - 1]
        return "\(weekday), \(two(parts.day)) \(month) \(parts.year ?? 1970) "
            + "\(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) UTC"
    }

    /// `keyId` and the DER signature of a `X-Amz-Meta-Signature` value, for verifiers (and tests).
    package static func parse(_ header: String) -> (keyID: String, signature: Data)? {
        let parts = header.split(separator: ",", maxSplits: 1)
        guard parts.count == 2, parts[0].hasPrefix("keyId=\""), parts[0].hasSuffix("\""),
            parts[1].hasPrefix("signature=\""), parts[1].hasSuffix("\"")
        else { return nil }
        let id = parts[0].dropFirst("keyId=\"".count).dropLast()
        let signature = parts[1].dropFirst("signature=\"".count).dropLast()
        guard let der = Data(base64Encoded: String(signature)) else { return nil }
        return (String(id), der)
    }
}

/// Checks the signatures of NHS answers as the apps do (nhs §2, "App-side verification"): the key named by
/// `keyId`, ECDSA P-256 over SHA-256 of `<Request-Id>:<METHOD>:<path>:<date>:` and the body.
package struct NHSVerifier: Sendable {
    package let keys: [String: P256.Signing.PublicKey]

    package init(keys: [String: P256.Signing.PublicKey]) {
        self.keys = keys
    }

    /// Why an answer's signature was refused.
    package enum Failure: Error, Equatable, CustomStringConvertible {
        case missingHeaders
        case malformedSignature
        case unknownKey(String)
        case invalidSignature

        package var description: String {
            switch self {
            case .missingHeaders: "no X-Amz-Meta-Signature and X-Amz-Meta-Signature-Date"
            case .malformedSignature: "X-Amz-Meta-Signature is not keyId=\"…\",signature=\"…\""
            case .unknownKey(let id): "signed with the unknown key id \(id)"
            case .invalidSignature: "the signature does not verify"
            }
        }
    }

    /// Returns the key id when `signature` and `date` (the two headers or S3 metadata) sign the distributed file
    /// `body` (`<date>:` then the bytes).
    @discardableResult
    package func verifyFile(signature: String?, date: String?, body: some Sequence<UInt8>) throws(Failure) -> String {
        guard let signature, let date else { throw .missingHeaders }
        guard let (id, der) = NHSSigner.parse(signature) else { throw .malformedSignature }
        guard let key = self.keys[id] else { throw .unknownKey(id) }
        guard let ecdsa = try? P256.Signing.ECDSASignature(derRepresentation: der),
            key.isValidSignature(ecdsa, for: SHA256.hash(data: Array("\(date):".utf8) + Array(body)))
        else { throw .invalidSignature }
        return id
    }

    /// Returns the key id when `signature` and `date` (the two headers) sign the request's answer `body`.
    @discardableResult
    package func verifyAnswer(
        signature: String?,
        date: String?,
        requestID: String?,
        method: String,
        path: String,
        body: some Sequence<UInt8>
    ) throws(Failure) -> String {
        guard let signature, let date else { throw .missingHeaders }
        guard let (id, der) = NHSSigner.parse(signature) else { throw .malformedSignature }
        guard let key = self.keys[id] else { throw .unknownKey(id) }
        let bytes = NHSSigner.answerBytes(requestID: requestID, method: method, path: path, date: date, body: body)
        guard let ecdsa = try? P256.Signing.ECDSASignature(derRepresentation: der),
            key.isValidSignature(ecdsa, for: SHA256.hash(data: bytes))
        else { throw .invalidSignature }
        return id
    }
}
