// The Exposure Notification cryptography a phone uses (Apple/Google "Exposure Notification Cryptography
// Specification" v1.2): temporary exposure keys, rolling proximity identifiers and associated encrypted metadata.
// Checked against Tests/CWAToolTests/Vectors/rolling-proximity-ids.json.

import Crypto
import Foundation
import _CryptoExtras

/// 10-minute intervals since the epoch (ENIntervalNumber); a key is valid for 144 of them (a UTC day).
enum ENInterval {
    static let seconds = 600
    static let perDay: UInt32 = 144

    static func number(of date: Date) -> UInt32 {
        UInt32(Int(date.timeIntervalSince1970) / Self.seconds)
    }

    static func date(of interval: UInt32) -> Date {
        Date(timeIntervalSince1970: TimeInterval(Int(interval) * Self.seconds))
    }

    /// The first interval of the UTC day holding `interval`.
    static func dayStart(of interval: UInt32) -> UInt32 {
        interval / Self.perDay * Self.perDay
    }
}

/// A temporary exposure key and the intervals it covers.
struct ExposureKey: Codable, Sendable, Equatable {
    var keyData: Data
    var rollingStartIntervalNumber: UInt32
    var rollingPeriod: UInt32

    func covers(_ interval: UInt32) -> Bool {
        interval >= self.rollingStartIntervalNumber && interval < self.rollingStartIntervalNumber + self.rollingPeriod
    }

    /// A random key (from the system CSPRNG) for the UTC day starting at `dayStart`.
    static func random(dayStart: UInt32) -> ExposureKey {
        ExposureKey(
            keyData: Data(SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }),
            rollingStartIntervalNumber: dayStart,
            rollingPeriod: ENInterval.perDay
        )
    }
}

/// RPIK, RPI, AEMK and AEM of the specification.
enum ExposureCrypto {
    /// RPIK = HKDF-SHA256(TEK, salt: none, info: "EN-RPIK", 16 bytes).
    static func rollingProximityIdentifierKey(_ tek: Data) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: tek),
            info: Array("EN-RPIK".utf8),
            outputByteCount: 16
        )
    }

    /// AEMK = HKDF-SHA256(TEK, salt: none, info: "EN-AEMK", 16 bytes).
    static func associatedEncryptedMetadataKey(_ tek: Data) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: tek),
            info: Array("EN-AEMK".utf8),
            outputByteCount: 16
        )
    }

    /// RPI_j = AES-128(RPIK, "EN-RPI" ‖ 0x000000000000 ‖ ENIN_j as little-endian UInt32): one block, no mode.
    static func rollingProximityIdentifier(key: SymmetricKey, interval: UInt32) -> [UInt8] {
        var block = Array("EN-RPI".utf8) + [UInt8](repeating: 0, count: 6)
        withUnsafeBytes(of: interval.littleEndian) { block.append(contentsOf: $0) }
        // A 16-byte block and a 16-byte key: the only errors AES.permute reports cannot happen here.
        try! AES.permute(&block, key: key)
        return block
    }

    /// AEM = AES-128-CTR(AEMK, IV = RPI, metadata).
    static func associatedEncryptedMetadata(key: SymmetricKey, rpi: [UInt8], metadata: [UInt8]) -> [UInt8] {
        // The RPI is 16 bytes, a valid CTR IV; the key is 16 bytes.
        Array(try! AES._CTR.encrypt(metadata, using: key, nonce: try! AES._CTR.Nonce(nonceBytes: rpi)))
    }
}
