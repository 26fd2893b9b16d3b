// Request and response bodies of both APIs (cwa-satellites §1.2), and their padding.

import ENCrypto
import ENServiceKit
import Foundation
import Hummingbird
import NIOCore

struct RegistrationTokenRequest: Decodable, Sendable {
    var key: String
    var keyType: String
    var keyDob: String?

    /// The key, checked against its format (a teleTAN's check character included) before any database work.
    func validated() throws(VerificationFailure) -> RegistrationKey {
        switch self.keyType {
        case "GUID":
            guard let guid = HashedGUID(self.key) else {
                throw .invalidRequest("key: expected 64 hex characters (SHA-256 of the GUID)")
            }
            var dob: DOBHash?
            if let keyDob = self.keyDob {
                guard let parsed = DOBHash(keyDob) else {
                    throw .invalidRequest("keyDob: expected 64 characters (x or hex, then hex)")
                }
                dob = parsed
            }
            return .guid(guid, dob: dob)
        case "TELETAN":
            guard self.keyDob == nil else { throw .invalidRequest("keyDob: allowed only with keyType GUID") }
            guard let teleTAN = TeleTAN(validating: self.key) else { throw .invalidRequest("key: not a valid teleTAN") }
            return .teleTAN(teleTAN)
        default:
            throw .invalidRequest("keyType: expected GUID or TELETAN")
        }
    }
}

struct RegistrationTokenBody: Decodable, Sendable {
    var registrationToken: String

    func validated() throws(VerificationFailure) -> String {
        guard RandomUUID.isValid(self.registrationToken) else {
            throw .invalidRequest("registrationToken: expected a UUID v4 in lower case")
        }
        return self.registrationToken
    }
}

/// `{"tan": "<uuid>", "event"?: bool}`. `event` is our extension: `true` consumes only a TAN of an EVENT teleTAN,
/// `false` any other; absent, any TAN (the reference's request).
struct TANBody: Decodable, Sendable {
    var tan: String
    var event: Bool?
    /// The submission attempt that spends the TAN (a UUID), recorded with it.
    var submission: String?

    func validated() throws(VerificationFailure) -> (tan: String, requirement: TANRequirement, submission: UUID?) {
        guard RandomUUID.isValid(self.tan) else { throw .invalidRequest("tan: expected a UUID v4 in lower case") }
        let requirement: TANRequirement =
            switch self.event {
            case nil: .any
            case true?: .event
            case false?: .notEvent
            }
        return (self.tan, requirement, try SubmissionAttempt.parse(self.submission))
    }
}

/// `{"tanHash"}`: the lower-case hex SHA-256 of a TAN.
struct TANHashBody: Decodable, Sendable {
    var tanHash: String

    func validated() throws(VerificationFailure) -> String {
        guard SecretHash.isSHA256Hex(self.tanHash) else {
            throw .invalidRequest("tanHash: expected the lower-case hex SHA-256 of a TAN")
        }
        return self.tanHash
    }
}

/// `{"redeemedBy"}`: the submission attempt that spent a credential, `null` when it is unused or its spender named
/// none; `redeemed` tells the two apart.
struct RedemptionResponse: Codable, Equatable, Sendable {
    var redeemed: Bool
    var redeemedBy: String?
}

/// The `submission` member of a spending call: absent, or a UUID (any case), which is stored lower-case.
enum SubmissionAttempt {
    static func parse(_ text: String?) throws(VerificationFailure) -> UUID? {
        guard let text else { return nil }
        guard let id = UUID(uuidString: text) else { throw .invalidRequest("submission: expected a UUID") }
        return id
    }
}

struct RegistrationTokenResponse: Codable, Equatable, Sendable {
    var registrationToken: String
    var responsePadding: String?
}

struct TANResponse: Codable, Equatable, Sendable {
    var tan: String
    var responsePadding: String?
}

struct TestResultResponse: Codable, Equatable, Sendable {
    var testResult: Int
    var sc: Int64
    var labId: String?
    var responsePadding: String?
}

struct InternalTestResultResponse: Codable, Equatable, Sendable {
    var testResult: Int
    var sc: Int64
    var labId: String?
    var testId: String
}

struct TeleTANResponse: Codable, Equatable, Sendable {
    var value: String
}

/// JSON bodies with `responsePadding` sized so that real and fake answers of an endpoint have the same length.
enum PaddedJSON {
    /// Padding of the registration token answer (§1.5); the rest of the body has a fixed length.
    static let registrationTokenPadding = 1
    /// Padding of the TAN answer (§1.5).
    static let tanPadding = 15

    /// Every result-poll body is this long. The reference pads by a fixed 45 characters, so its real answers
    /// with a `labId` (and any `sc` of another digit count) are longer than its fake ones (§1.5). Here the
    /// padding fills up to the longest possible body: 64 code points of `labId` escaped to 6 bytes each, a
    /// 20-character `sc`, a two-digit result, and at least one padding character.
    static let testResultSize: Int = {
        let longest = TestResultResponse(
            testResult: 14,
            sc: .min,
            labId: String(repeating: "\u{1}", count: 64),
            responsePadding: ""
        )
        return (try? Self.encode(longest).count).map { $0 + 1 } ?? 512
    }()

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func encode(_ value: some Encodable) throws -> Data {
        try Self.encoder.encode(value)
    }

    /// `response` with padding that brings the encoded body to `testResultSize` bytes (alphanumeric padding
    /// encodes to one byte per character).
    static func padded(_ response: TestResultResponse) throws -> Data {
        var response = response
        response.responsePadding = ""
        let unpadded = try Self.encode(response).count
        response.responsePadding = ResponsePadding.random(count: max(1, Self.testResultSize - unpadded))
        return try Self.encode(response)
    }

    static func response(_ status: HTTPResponse.Status, _ body: Data) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: body))
        )
    }

    static func response(_ status: HTTPResponse.Status, encoding value: some Encodable) throws -> Response {
        self.response(status, try self.encode(value))
    }
}
