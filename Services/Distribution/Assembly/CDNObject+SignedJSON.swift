// A signed NHS JSON document as a CDN object (nhs §2).

import ENCrypto
import ENNHS
import Foundation

extension CDNObject {
    /// A JSON document with the NHS file signature over `date:` ‖ the bytes (nhs §2), as the stores publish it.
    static func signedJSON(key: String, body: [UInt8], signer: NHSSigner, at date: Date) throws -> CDNObject {
        let headers = try signer.signFile(body, at: date)
        let signature = CDNObject.Signature(value: headers.signature, date: headers.date)
        return CDNObject(
            key: key,
            body: body,
            contentType: .json,
            isDirectoryIndex: false,
            checksum: CDNObject.signedChecksum(body, keyID: signature.keyID),
            signature: signature
        )
    }
}
