// Detached CMS signatures (RFC 5652 §5) as the federation partners write them: parsed here, with every signature
// algorithm their toolkits produce (cwa-satellites §5.4: "any supported algorithm").

import Crypto
import ENCrypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// A detached CMS `SignedData` with exactly one signer, parsed from BER or DER: what the EFGS protocol carries in
/// `batchSignature` and the rehearsal gateway in its certificate rows.
///
/// swift-certificates' own verifier accepts only signature algorithm identifiers that name the digest
/// (`sha256WithRSAEncryption`, `ecdsa-with-SHA256`); `openssl cms -sign` and several BouncyCastle versions write
/// `rsaEncryption` with the digest in `digestAlgorithm`, and RSASSA-PSS with its parameters. Those are parsed and
/// checked here, and the certificate path is left to swift-certificates' `Verifier`.
struct DetachedSignedData: Sendable {
    /// The signer's `digestAlgorithm`.
    var digest: SignatureDigest
    /// How the signature is computed, from `signatureAlgorithm` (and, for `rsaEncryption` and `id-ecPublicKey`,
    /// `digestAlgorithm`).
    var scheme: SignatureScheme
    /// The content, when the signer attached it (`openssl cms -sign -stream` does); the EFGS reference verifies
    /// against the batch it was given whatever is attached (BouncyCastle's `CMSSignedData(content, signature)`), here
    /// an attached content must be exactly that batch.
    var attachedContent: [UInt8]?
    /// The certificates the structure carries (the signer's among them).
    var certificates: [Certificate]
    /// The signer's certificate, found by its `sid`.
    var signer: Certificate
    /// The DER of the signed attributes with the SET OF tag (what is signed), their `messageDigest`, and whether
    /// their `contentType` is `id-data`; `nil` when the signer signed the content itself.
    var signedAttributes: SignedAttributes?
    var signature: [UInt8]

    struct SignedAttributes: Sendable {
        var der: [UInt8]
        var messageDigest: [UInt8]
    }

    /// Parses `der`; throws `DetachedSignatureError.invalid` with a reason that names structure, never content.
    init(berEncoded bytes: [UInt8]) throws(DetachedSignatureError) {
        do {
            try self.init(node: try BER.parse(bytes))
        } catch let error as DetachedSignatureError {
            throw error
        } catch {
            throw .invalid("not a CMS structure")
        }
    }

    private init(node root: ASN1Node) throws {
        // ContentInfo ::= SEQUENCE { contentType, content [0] EXPLICIT }
        let signedData = try BER.sequence(root, identifier: .sequence) { nodes in
            let type = try ASN1ObjectIdentifier(berEncoded: &nodes)
            guard type == OID.signedData else { throw DetachedSignatureError.invalid("not a SignedData") }
            return try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { $0 }
        }
        var parsed: (digests: [AlgorithmID], attached: [UInt8]?, certificates: [Certificate], signer: ASN1Node)?
        try BER.sequence(signedData, identifier: .sequence) { nodes in
            _ = try Int(berEncoded: &nodes)  // version: 1 or 3, as the signers' sid kinds allow
            guard let digestSet = nodes.next() else { throw DetachedSignatureError.invalid("no digestAlgorithms") }
            let digests = try ASN1Nodes.members(of: digestSet, "digestAlgorithms").map(AlgorithmID.init)
            let attached = try BER.sequence(try ASN1Nodes.next(&nodes, "encapContentInfo"), identifier: .sequence) {
                content in
                let type = try ASN1ObjectIdentifier(berEncoded: &content)
                guard type == OID.data else { throw DetachedSignatureError.invalid("the content is not id-data") }
                let attached = try BER.optionalExplicitlyTagged(&content, tagNumber: 0, tagClass: .contextSpecific) {
                    Array(try ASN1OctetString(berEncoded: $0).bytes)
                }
                guard content.next() == nil else {
                    throw DetachedSignatureError.invalid("encapContentInfo has extra fields")
                }
                return attached
            }
            var certificates: [Certificate] = []
            if let node = BER.optionalImplicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific, { $0 }) {
                for member in try ASN1Nodes.members(of: node, "certificates") where member.identifier == .sequence {
                    certificates.append(try Certificate(derEncoded: Array(member.encodedBytes)))
                }
            }
            _ = BER.optionalImplicitlyTagged(&nodes, tagNumber: 1, tagClass: .contextSpecific) { $0 }  // crls
            let signerInfos = try ASN1Nodes.members(of: try ASN1Nodes.next(&nodes, "signerInfos"), "signerInfos")
            guard signerInfos.count == 1 else { throw DetachedSignatureError.invalid("not exactly one signer") }
            parsed = (digests, attached, certificates, signerInfos[0])
        }
        guard let parsed else { throw DetachedSignatureError.invalid("not a SignedData") }
        self.certificates = parsed.certificates
        self.attachedContent = parsed.attached

        // SignerInfo ::= SEQUENCE { version, sid, digestAlgorithm, signedAttrs [0] IMPLICIT OPTIONAL,
        //                           signatureAlgorithm, signature, unsignedAttrs [1] IMPLICIT OPTIONAL }
        var fields:
            (
                sid: SignerIdentifier, digest: AlgorithmID, attributes: ASN1Node?, algorithm: AlgorithmID,
                signature: [UInt8]
            )?
        try BER.sequence(parsed.signer, identifier: .sequence) { nodes in
            _ = try Int(berEncoded: &nodes)
            let sid = try SignerIdentifier(try ASN1Nodes.next(&nodes, "sid"))
            let digest = try AlgorithmID(try ASN1Nodes.next(&nodes, "digestAlgorithm"))
            let attributes = BER.optionalImplicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { $0 }
            let algorithm = try AlgorithmID(try ASN1Nodes.next(&nodes, "signatureAlgorithm"))
            let signature = try ASN1OctetString(berEncoded: &nodes)
            // Unsigned attributes (a countersignature, a timestamp) are not what is verified; they are skipped.
            _ = BER.optionalImplicitlyTagged(&nodes, tagNumber: 1, tagClass: .contextSpecific) { $0 }
            fields = (sid, digest, attributes, algorithm, Array(signature.bytes))
        }
        guard let fields else { throw DetachedSignatureError.invalid("no signer") }
        // RFC 5652 §5.1: a verifier may refuse a digest algorithm the parent set does not list.
        guard parsed.digests.contains(where: { $0.oid == fields.digest.oid }) else {
            throw DetachedSignatureError.invalid("the signer's digest algorithm is not among digestAlgorithms")
        }
        guard let digest = SignatureDigest(oid: fields.digest.oid) else {
            throw DetachedSignatureError.invalid("unsupported digest algorithm")
        }
        self.digest = digest
        self.scheme = try SignatureScheme(fields.algorithm, digest: digest)
        self.signature = fields.signature
        guard let signer = try parsed.certificates.first(where: { try fields.sid.identifies($0) }) else {
            throw DetachedSignatureError.invalid("the signer's certificate is not in the structure")
        }
        self.signer = signer
        self.signedAttributes = try fields.attributes.map(Self.signedAttributes)
    }

    /// The signed attributes must name `id-data` as content type and carry one message digest (RFC 5652 §5.3,
    /// §11.1–§11.2); what is signed is their DER with the SET OF tag in place of `[0]`.
    private static func signedAttributes(_ node: ASN1Node) throws -> SignedAttributes {
        let attributes = try ASN1Nodes.members(of: node, "signedAttrs")
        var contentType: ASN1ObjectIdentifier?
        var messageDigest: [UInt8]?
        for attribute in attributes {
            try BER.sequence(attribute, identifier: .sequence) { nodes in
                let type = try ASN1ObjectIdentifier(berEncoded: &nodes)
                let values = try ASN1Nodes.members(
                    of: try ASN1Nodes.next(&nodes, "attribute values"),
                    "attribute values"
                )
                switch type {
                case OID.contentTypeAttribute:
                    guard contentType == nil, values.count == 1 else {
                        throw DetachedSignatureError.invalid("not exactly one content type attribute")
                    }
                    contentType = try ASN1ObjectIdentifier(berEncoded: values[0])
                case OID.messageDigestAttribute:
                    guard messageDigest == nil, values.count == 1 else {
                        throw DetachedSignatureError.invalid("not exactly one message digest attribute")
                    }
                    messageDigest = Array(try ASN1OctetString(berEncoded: values[0]).bytes)
                default:
                    break
                }
            }
        }
        guard contentType == OID.data else {
            throw DetachedSignatureError.invalid("the signed attributes do not name id-data as content type")
        }
        guard let messageDigest else { throw DetachedSignatureError.invalid("no message digest attribute") }
        var der = Array(node.encodedBytes)
        der[0] = 0x31  // SET OF, as RFC 5652 §5.4 has the signature computed
        return SignedAttributes(der: der, messageDigest: messageDigest)
    }

    /// Whether this structure's signature signs `content` with the signer's public key.
    func signs(_ content: [UInt8]) throws(DetachedSignatureError) {
        if let attached = self.attachedContent, attached != content {
            throw .invalid("the attached content is not the content to verify")
        }
        let signed: [UInt8]
        if let attributes = self.signedAttributes {
            guard ConstantTime.equals(self.digest.hash(content), attributes.messageDigest) else {
                throw .invalid("Message digest mismatch")
            }
            signed = attributes.der
        } else {
            signed = content
        }
        guard self.scheme.verifies(self.signature, over: signed, with: self.signer.publicKey) else {
            throw .invalid("the signature does not verify with the signer's public key")
        }
    }
}

/// Why a detached signature is not believed; the reasons name structure, never content.
enum DetachedSignatureError: Error, Equatable {
    case invalid(String)
}

/// The digests a signer may use: SHA-2 only (SHA-1 is refused).
enum SignatureDigest: Sendable, Equatable {
    case sha256, sha384, sha512

    init?(oid: ASN1ObjectIdentifier) {
        switch oid {
        case OID.sha256: self = .sha256
        case OID.sha384: self = .sha384
        case OID.sha512: self = .sha512
        default: return nil
        }
    }

    var byteCount: Int {
        switch self {
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }

    func hash(_ bytes: some DataProtocol) -> [UInt8] {
        switch self {
        case .sha256: Array(SHA256.hash(data: bytes))
        case .sha384: Array(SHA384.hash(data: bytes))
        case .sha512: Array(SHA512.hash(data: bytes))
        }
    }
}

/// The signature schemes of a SignerInfo.
enum SignatureScheme: Sendable, Equatable {
    /// ECDSA over the digest (`ecdsa-with-SHA*`, or `id-ecPublicKey` with the digest from `digestAlgorithm`).
    case ecdsa(SignatureDigest)
    /// RSASSA-PKCS1-v1_5 (`sha*WithRSAEncryption`, or `rsaEncryption` with the digest from `digestAlgorithm`).
    case rsaPKCS1(SignatureDigest)
    /// RSASSA-PSS with MGF1 and the salt length of its parameters (RFC 4055 §3.1, RFC 8017 §9.1).
    case rsaPSS(RSAPSSParameters)

    /// The scheme of `algorithm` for a signer whose `digestAlgorithm` is `digest`: an identifier that names a digest
    /// must name the same one.
    init(_ algorithm: AlgorithmID, digest: SignatureDigest) throws(DetachedSignatureError) {
        func same(_ named: SignatureDigest) throws(DetachedSignatureError) -> SignatureDigest {
            guard named == digest else { throw .invalid("the signature algorithm's digest is not the signer's") }
            return named
        }
        switch algorithm.oid {
        case OID.ecdsaWithSHA256: self = .ecdsa(try same(.sha256))
        case OID.ecdsaWithSHA384: self = .ecdsa(try same(.sha384))
        case OID.ecdsaWithSHA512: self = .ecdsa(try same(.sha512))
        case OID.ecPublicKey: self = .ecdsa(digest)
        case OID.sha256WithRSAEncryption: self = .rsaPKCS1(try same(.sha256))
        case OID.sha384WithRSAEncryption: self = .rsaPKCS1(try same(.sha384))
        case OID.sha512WithRSAEncryption: self = .rsaPKCS1(try same(.sha512))
        case OID.rsaEncryption: self = .rsaPKCS1(digest)
        case OID.rsassaPSS:
            let parameters = try RSAPSSParameters(algorithm.parameters)
            _ = try same(parameters.digest)
            self = .rsaPSS(parameters)
        default:
            throw .invalid("unsupported signature algorithm")
        }
    }

    func verifies(_ signature: [UInt8], over bytes: [UInt8], with key: Certificate.PublicKey) -> Bool {
        switch self {
        case .ecdsa(let digest):
            let algorithm: Certificate.SignatureAlgorithm =
                switch digest {
                case .sha256: .ecdsaWithSHA256
                case .sha384: .ecdsaWithSHA384
                case .sha512: .ecdsaWithSHA512
                }
            return key.isValidSignature(signature, for: bytes, signatureAlgorithm: algorithm)
        case .rsaPKCS1(let digest):
            let algorithm: Certificate.SignatureAlgorithm =
                switch digest {
                case .sha256: .sha256WithRSAEncryption
                case .sha384: .sha384WithRSAEncryption
                case .sha512: .sha512WithRSAEncryption
                }
            return key.isValidSignature(signature, for: bytes, signatureAlgorithm: algorithm)
        case .rsaPSS(let parameters):
            guard let rsa = _RSA.Signing.PublicKey(key) else { return false }
            return RSAPSS.verifies(signature, over: bytes, key: rsa, parameters: parameters)
        }
    }
}

/// An `AlgorithmIdentifier`: its OID and, when present, its parameters.
struct AlgorithmID: Sendable {
    var oid: ASN1ObjectIdentifier
    var parameters: ASN1Node?

    init(_ node: ASN1Node) throws {
        (self.oid, self.parameters) = try BER.sequence(node, identifier: .sequence) { nodes in
            let oid = try ASN1ObjectIdentifier(berEncoded: &nodes)
            let parameters = nodes.next()
            guard nodes.next() == nil else { throw DetachedSignatureError.invalid("an algorithm with extra fields") }
            return (oid, parameters)
        }
    }
}

/// `SignerIdentifier ::= CHOICE { issuerAndSerialNumber, subjectKeyIdentifier [0] }`.
private enum SignerIdentifier {
    case issuerAndSerialNumber(DistinguishedName, [UInt8])
    case subjectKeyIdentifier([UInt8])

    init(_ node: ASN1Node) throws {
        if node.identifier == .sequence {
            self = try BER.sequence(node, identifier: .sequence) { nodes in
                let issuer = try DistinguishedName(derEncoded: try ASN1Nodes.next(&nodes, "issuer"))
                let serial = try ASN1Nodes.next(&nodes, "serialNumber")
                guard serial.identifier == .integer, case .primitive(let bytes) = serial.content else {
                    throw DetachedSignatureError.invalid("the signer's serial number is not an integer")
                }
                return .issuerAndSerialNumber(issuer, Array(bytes))
            }
        } else if node.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            self = .subjectKeyIdentifier(
                Array(try ASN1OctetString(berEncoded: node, withIdentifier: node.identifier).bytes)
            )
        } else {
            throw DetachedSignatureError.invalid("unknown signer identifier")
        }
    }

    func identifies(_ certificate: Certificate) throws -> Bool {
        switch self {
        case .issuerAndSerialNumber(let issuer, let serial):
            // Compared as integers: a DER INTEGER carries a leading zero byte before a set high bit, which the
            // certificate's serial number may not keep.
            return certificate.issuer == issuer
                && certificate.serialNumber.bytes.drop(while: { $0 == 0 }).elementsEqual(
                    serial.drop(while: { $0 == 0 })
                )
        case .subjectKeyIdentifier(let identifier):
            guard let extensionValue = try certificate.extensions.subjectKeyIdentifier else { return false }
            return Array(extensionValue.keyIdentifier) == identifier
        }
    }
}

/// Reading constructed nodes without a type for each member.
enum ASN1Nodes {
    /// The next node of a SEQUENCE; a missing one is a truncated structure.
    static func next(_ nodes: inout ASN1NodeCollection.Iterator, _ field: String) throws -> ASN1Node {
        guard let node = nodes.next() else { throw DetachedSignatureError.invalid("no \(field)") }
        return node
    }

    /// The members of a constructed node (a SET OF, or an implicitly tagged one).
    static func members(of node: ASN1Node, _ field: String) throws -> [ASN1Node] {
        guard case .constructed(let members) = node.content else {
            throw DetachedSignatureError.invalid("\(field) is not constructed")
        }
        return Array(members)
    }
}

/// The object identifiers this file reads.
enum OID {
    static let data: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 1]
    static let signedData: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 7, 2]
    static let contentTypeAttribute: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 3]
    static let messageDigestAttribute: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 9, 4]
    static let sha256: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
    static let sha384: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 2]
    static let sha512: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 3]
    static let ecPublicKey: ASN1ObjectIdentifier = [1, 2, 840, 10_045, 2, 1]
    static let ecdsaWithSHA256: ASN1ObjectIdentifier = [1, 2, 840, 10_045, 4, 3, 2]
    static let ecdsaWithSHA384: ASN1ObjectIdentifier = [1, 2, 840, 10_045, 4, 3, 3]
    static let ecdsaWithSHA512: ASN1ObjectIdentifier = [1, 2, 840, 10_045, 4, 3, 4]
    static let rsaEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 1]
    static let rsassaPSS: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 10]
    static let mgf1: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 8]
    static let sha256WithRSAEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 11]
    static let sha384WithRSAEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 12]
    static let sha512WithRSAEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113_549, 1, 1, 13]
}
