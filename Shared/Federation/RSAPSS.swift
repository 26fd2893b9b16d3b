// RSASSA-PSS verification with the salt length a signer chose (RFC 8017 §8.1.2, §9.1.2; parameters RFC 4055 §3.1).
//
// swift-crypto verifies PSS only with a salt as long as the digest; OpenSSL signs with the longest salt the key
// allows unless told otherwise, so the encoding is checked here, on the RSA public operation of BigInt.

import BigInt
import Foundation
import SwiftASN1
import _CryptoExtras

/// `RSASSA-PSS-params`: the digest, MGF1's digest and the salt length. The trailer field must be 1 (`0xbc`).
struct RSAPSSParameters: Sendable, Equatable {
    var digest: SignatureDigest
    var maskDigest: SignatureDigest
    var saltLength: Int

    /// The parameters of an `rsassaPss` algorithm identifier. Their defaults name SHA-1, which is refused, so
    /// parameters must be present.
    init(_ node: ASN1Node?) throws(DetachedSignatureError) {
        guard let node else { throw .invalid("RSASSA-PSS without parameters (SHA-1)") }
        do {
            (self.digest, self.maskDigest, self.saltLength) = try BER.sequence(node, identifier: .sequence) { nodes in
                guard
                    let hash = try BER.optionalExplicitlyTagged(
                        &nodes,
                        tagNumber: 0,
                        tagClass: .contextSpecific,
                        {
                            try AlgorithmID($0)
                        }
                    ), let digest = SignatureDigest(oid: hash.oid)
                else { throw DetachedSignatureError.invalid("RSASSA-PSS with an unsupported digest") }
                guard
                    let mask = try BER.optionalExplicitlyTagged(
                        &nodes,
                        tagNumber: 1,
                        tagClass: .contextSpecific,
                        {
                            try AlgorithmID($0)
                        }
                    ), mask.oid == OID.mgf1, let maskHashNode = mask.parameters,
                    let maskDigest = SignatureDigest(oid: try AlgorithmID(maskHashNode).oid)
                else { throw DetachedSignatureError.invalid("RSASSA-PSS with an unsupported mask generation") }
                let salt =
                    try BER.optionalExplicitlyTagged(&nodes, tagNumber: 2, tagClass: .contextSpecific) {
                        try Int(berEncoded: $0)
                    } ?? 20
                let trailer =
                    try BER.optionalExplicitlyTagged(&nodes, tagNumber: 3, tagClass: .contextSpecific) {
                        try Int(berEncoded: $0)
                    } ?? 1
                guard (0...RSAPSSParameters.maximumSaltLength).contains(salt), trailer == 1, nodes.next() == nil else {
                    throw DetachedSignatureError.invalid("RSASSA-PSS with unsupported parameters")
                }
                return (digest, maskDigest, salt)
            }
        } catch let error as DetachedSignatureError {
            throw error
        } catch {
            throw .invalid("unreadable RSASSA-PSS parameters")
        }
    }

    /// Longer than any salt a key of `RSAPSS.maximumModulusBits` can hold.
    static let maximumSaltLength = RSAPSS.maximumModulusBits / 8

    init(digest: SignatureDigest, maskDigest: SignatureDigest, saltLength: Int) {
        self.digest = digest
        self.maskDigest = maskDigest
        self.saltLength = saltLength
    }
}

enum RSAPSS {
    /// Larger keys are refused: the public operation's cost grows with the modulus, and no partner signs with one.
    static let maximumModulusBits = 8192

    /// RSASSA-PSS-VERIFY: whether `signature` is a PSS signature of `message` under `key` with `parameters`.
    static func verifies(
        _ signature: [UInt8],
        over message: [UInt8],
        key: _RSA.Signing.PublicKey,
        parameters: RSAPSSParameters
    ) -> Bool {
        guard let primitives = try? key.getKeyPrimitives() else { return false }
        let modulus = BigUInt(primitives.modulus)
        let exponent = BigUInt(primitives.publicExponent)
        guard modulus.bitWidth <= self.maximumModulusBits else { return false }
        let modulusBytes = (modulus.bitWidth + 7) / 8
        // RSAVP1 (§5.2.2): the signature is exactly k bytes and its integer below n.
        guard signature.count == modulusBytes, modulus > 0 else { return false }
        let s = BigUInt(Data(signature))
        guard s < modulus else { return false }
        let m = s.power(exponent, modulus: modulus)
        let emBits = modulus.bitWidth - 1
        let emLength = (emBits + 7) / 8
        let raw = [UInt8](m.serialize())
        guard raw.count <= emLength else { return false }
        let encoded = [UInt8](repeating: 0, count: emLength - raw.count) + raw
        return self.encodingMatches(message, encoded: encoded, emBits: emBits, parameters: parameters)
    }

    /// EMSA-PSS-VERIFY (§9.1.2) with a known salt length.
    static func encodingMatches(
        _ message: [UInt8],
        encoded: [UInt8],
        emBits: Int,
        parameters: RSAPSSParameters
    ) -> Bool {
        let hashLength = parameters.digest.byteCount
        let saltLength = parameters.saltLength
        let emLength = encoded.count
        // Subtractions: a salt length from the parameters must not overflow a sum.
        guard saltLength >= 0, emLength >= hashLength + 2, emLength - hashLength - 2 >= saltLength,
            encoded[emLength - 1] == 0xBC
        else { return false }
        let maskedLength = emLength - hashLength - 1
        let maskedDB = encoded[0..<maskedLength]
        let h = Array(encoded[maskedLength..<(emLength - 1)])
        let unusedBits = 8 * emLength - emBits
        let topMask: UInt8 = unusedBits == 0 ? 0 : ~UInt8(0xFF >> unusedBits)
        guard maskedDB[maskedDB.startIndex] & topMask == 0 else { return false }
        let mask = self.mgf1(seed: h, length: maskedLength, digest: parameters.maskDigest)
        var db = zip(maskedDB, mask).map { $0 ^ $1 }
        db[0] &= ~topMask
        // DB = PS (zeros) ‖ 0x01 ‖ salt
        let separator = maskedLength - saltLength - 1
        guard db[0..<separator].allSatisfy({ $0 == 0 }), db[separator] == 0x01 else { return false }
        let salt = db[(separator + 1)...]
        let prime = [UInt8](repeating: 0, count: 8) + parameters.digest.hash(message) + salt
        return parameters.digest.hash(prime) == h
    }

    /// MGF1 (§B.2.1).
    static func mgf1(seed: [UInt8], length: Int, digest: SignatureDigest) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(length + digest.byteCount)
        var counter: UInt32 = 0
        while output.count < length {
            let block = seed + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: counter >> $0) }
            output += digest.hash(block)
            counter += 1
        }
        return Array(output.prefix(length))
    }
}
