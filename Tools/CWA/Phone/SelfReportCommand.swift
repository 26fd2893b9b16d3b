// `cwa phone self-report`: a positive rapid test the user reports without a lab, proven by the app's Play Integrity
// verdict (cwa-satellites §4.1–§4.2, cwa-server §1.2–§1.7).

import ArgumentParser
import Crypto
import ENCrypto
import ENModels
import Foundation
import NIOHTTP1
import SwiftProtobuf

/// The rehearsal app's Play Integrity keys: what Google would hold (the key that signs verdicts and the key that
/// encrypts them for the app) and what the backend is configured with. With them this client makes the verdict a
/// genuine app on a strong device would get; they exist only for rehearsals (`make run`, `make e2e`).
struct PlayIntegrityOptions: ParsableArguments {
    @Option(
        name: .customLong("play-integrity-decryption-key"),
        help: "File with the app's Base64 AES-256 decryption key (env CWA_PLAY_INTEGRITY_DECRYPTION_KEY_FILE)."
    )
    var decryptionKeyOption: String?

    @Option(
        name: .customLong("play-integrity-signing-key"),
        help: "PEM P-256 key that signs verdicts (env CWA_PLAY_INTEGRITY_SIGNING_KEY_FILE)."
    )
    var signingKeyOption: String?

    var decryptionKeyFile: String? {
        self.decryptionKeyOption ?? environment("CWA_PLAY_INTEGRITY_DECRYPTION_KEY_FILE")
    }
    var signingKeyFile: String? { self.signingKeyOption ?? environment("CWA_PLAY_INTEGRITY_SIGNING_KEY_FILE") }

    func load() throws -> (decryption: SymmetricKey, signing: P256.Signing.PrivateKey) {
        guard let decryptionFile = self.decryptionKeyFile, let signingFile = self.signingKeyFile else {
            throw ValidationError("give --play-integrity-decryption-key and --play-integrity-signing-key")
        }
        guard let text = try? String(contentsOfFile: decryptionFile, encoding: .utf8),
            let bytes = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count == 32
        else { throw ClientFailure("\(decryptionFile) is not a Base64 32-byte key") }
        guard let pem = try? String(contentsOfFile: signingFile, encoding: .utf8),
            let key = try? P256.Signing.PrivateKey(pemRepresentation: pem)
        else { throw ClientFailure("\(signingFile) is not a PEM P-256 private key") }
        return (SymmetricKey(data: bytes), key)
    }
}

extension PhoneCommand {
    struct SelfReport: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "self-report",
            abstract: "Report a positive rapid test without a lab: get an attested OTP, then upload the keys with it.",
            discussion: """
                Creates a self-report OTP at data donation (POST /version/v1/android/srs, with a Play Integrity
                verdict made with the rehearsal keys), then submits the phone's keys with cwa-otp as
                SUBMISSION_TYPE_SRS_SELF_TEST. With --reuse-otp, submits other keys with the last OTP (it must be
                refused).
                """
        )

        @OptionGroup var phone: PhoneFile
        @OptionGroup var gateway: GatewayOptions
        @OptionGroup var playIntegrity: PlayIntegrityOptions
        @Flag(name: .customLong("reuse-otp"), help: "Submit with the OTP of the last self-report again.")
        var reuseOTP = false
        @Option(help: "The app's package name in the verdict.")
        var package: String = Self.cwaPackage
        @Option(help: "Base64 SHA-256 of the app's signing certificate in the verdict (default: the CWA app's).")
        var certificateDigest: String = Self.cwaCertificateDigest

        /// The CWA app's package name, which data-donation-service expects by default.
        static let cwaPackage = "de.rki.coronawarnapp"
        /// Base64 SHA-256 of the CWA app's signing certificate, which data-donation-service expects by default.
        static let cwaCertificateDigest = "Dday+17d9vY5YtsnHu1+9QTHd9l3LUhEcqzweVOe5zk="

        func run() async throws {
            var state = try self.phone.load()
            let now = Date()
            // A repeat carries another phone's keys, so that only the used OTP can refuse it (keys stored before would
            // be refused first, with KEYS_ALREADY_EXIST).
            let payload = try SubmissionBuilder.payload(
                keys: self.reuseOTP ? PhoneState.new(days: 14, now: now).keys : state.keys,
                checkIns: 0,
                now: now,
                submissionType: .srsSelfTest
            )
            let reply = try await withGateway(try self.gateway.client()) { client in
                let otp: String
                if self.reuseOTP {
                    guard let last = state.lastOTP else { throw ClientFailure("this phone has not self-reported yet") }
                    otp = last
                } else {
                    otp = UUID().uuidString.lowercased()
                    let created = try await SelfReportOTP.create(
                        otp: otp,
                        client: client,
                        app: self.gateway.app,
                        keys: try self.playIntegrity.load(),
                        package: self.package,
                        certificateDigest: self.certificateDigest,
                        now: now
                    )
                    print("self-report OTP: HTTP \(created.status) \(created.text)")
                    guard created.status == 200 else { throw ExitCode(3) }
                    state.lastOTP = otp
                    try self.phone.save(state)
                }
                return try await client.send(
                    .POST,
                    "\(self.gateway.app)/version/v1/diagnosis-keys",
                    headers: [("Content-Type", "application/x-protobuf"), ("cwa-fake", "0"), ("cwa-otp", otp)],
                    body: payload
                )
            }
            print(
                "self-report submission: HTTP \(reply.status), \(reply.wireSize) bytes"
                    + (reply.header("cwa-keys-truncated").map { ", keys truncated to \($0) days" } ?? "")
                    + (reply.header("cwa-error-code").map { ", \($0)" } ?? "")
            )
            guard reply.status == 200 else { throw ExitCode(3) }
        }
    }
}

/// The self-report OTP request of an Android app: the OTP with a fresh Android ID, attested by a Play Integrity token
/// whose request hash binds it to this request (Base64(SHA-256(salt ‖ payload)), §4.2 step 5).
enum SelfReportOTP {
    /// Creates `otp` at data donation (`POST /version/v1/android/srs`, attested with `keys`); 200 when it is created.
    static func create(
        otp: String,
        client: GatewayClient,
        app: String,
        keys: (decryption: SymmetricKey, signing: P256.Signing.PrivateKey),
        package: String = PhoneCommand.SelfReport.cwaPackage,
        certificateDigest: String = PhoneCommand.SelfReport.cwaCertificateDigest,
        now: Date
    ) async throws -> Reply {
        try await client.send(
            .POST,
            "\(app)/version/v1/android/srs",
            headers: [("Content-Type", "application/x-protobuf"), ("cwa-fake", "0")],
            body: try self.request(
                otp: otp,
                keys: keys,
                package: package,
                certificateDigest: certificateDigest,
                now: now
            )
        )
    }

    static func request(
        otp: String,
        keys: (decryption: SymmetricKey, signing: P256.Signing.PrivateKey),
        package: String,
        certificateDigest: String,
        now: Date
    ) throws -> [UInt8] {
        var message = SRSOneTimePasswordRequestAndroid()
        message.payload.otp = otp
        message.payload.androidID = Data((0..<8).map { _ in UInt8.random(in: 0...255) })
        let salt = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let payload: [UInt8] = try message.payload.serializedBytes()
        var hash = SHA256()
        hash.update(data: salt)
        hash.update(data: payload)
        let digest = Data(base64Encoded: certificateDigest) ?? Data()
        let verdict: [String: Any] = [
            "requestDetails": [
                "requestPackageName": package,
                "requestHash": Data(hash.finalize()).base64EncodedString(),
                "timestampMillis": String(Int64(now.timeIntervalSince1970 * 1000)),
            ],
            "appIntegrity": [
                "appRecognitionVerdict": "PLAY_RECOGNIZED", "packageName": package,
                "certificateSha256Digest": [Base64URL.encode(digest)],
            ],
            "deviceIntegrity": [
                "deviceRecognitionVerdict": [
                    "MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY", "MEETS_STRONG_INTEGRITY",
                ]
            ],
        ]
        message.authentication.salt = salt.base64EncodedString()
        message.authentication.safetyNetJws = try Self.token(verdict, keys: keys)
        message.requestPadding = Data(count: 64)
        return try message.serializedBytes()
    }

    /// The verdict signed (JWS, ES256) and encrypted for the app (JWE, A256KW + A256GCM), as Google sends it.
    static func token(
        _ verdict: [String: Any],
        keys: (decryption: SymmetricKey, signing: P256.Signing.PrivateKey)
    )
        throws -> String
    {
        let input =
            Base64URL.encode(Data(#"{"alg":"ES256"}"#.utf8)) + "."
            + Base64URL.encode(try JSONSerialization.data(withJSONObject: verdict))
        let signature = try keys.signing.signature(for: Data(input.utf8))
        let jws = input + "." + Base64URL.encode(signature.rawRepresentation)
        let header = Base64URL.encode(Data(#"{"alg":"A256KW","enc":"A256GCM"}"#.utf8))
        let contentKey = SymmetricKey(size: .bits256)
        let wrapped = try AES.KeyWrap.wrap(contentKey, using: keys.decryption)
        let sealed = try AES.GCM.seal(Data(jws.utf8), using: contentKey, authenticating: Data(header.utf8))
        return [
            header, Base64URL.encode(wrapped), Base64URL.encode(sealed.nonce), Base64URL.encode(sealed.ciphertext),
            Base64URL.encode(sealed.tag),
        ].joined(separator: ".")
    }
}
