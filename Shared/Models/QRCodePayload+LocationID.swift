// The location id of an event QR code, the value check-ins and trace warnings refer to.

import Crypto
package import Foundation

extension QRCodePayload {
    /// The location id: SHA-256 of the ASCII bytes `CWA-GUID` followed by the serialized `QRCodePayload` exactly as it
    /// appears in the QR code (cwa event registration; Tests/ENModelsTests/Vectors/event-qr-codes.json). It is computed
    /// over the received bytes, never over a re-encoding, so unknown fields cannot change it.
    package static func locationID(ofSerializedPayload payload: some DataProtocol) -> Data {
        var hasher = SHA256()
        hasher.update(data: Array("CWA-GUID".utf8))
        hasher.update(data: Array(payload))
        return Data(hasher.finalize())
    }

    /// The location id hash that check-in reports carry: SHA-256 of the location id.
    package static func locationIDHash(ofLocationID locationID: some DataProtocol) -> Data {
        Data(SHA256.hash(data: Array(locationID)))
    }

    /// Decodes the payload from the fragment of a `https://e.coronawarn.app?v=1#<base64url>` URL.
    package static func payloadBytes(fromURL url: String) -> Data? {
        guard let fragment = url.split(separator: "#", maxSplits: 1).dropFirst().first else { return nil }
        var base64 = fragment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
