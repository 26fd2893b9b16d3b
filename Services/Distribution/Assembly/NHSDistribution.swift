// The NHS side of distribution-service: the static documents and the key that signs them (nhs §2).

import ENCrypto
import ENNHS
import Foundation

/// The NHS side of distribution-service: the documents and the key that signs them.
struct NHSDistribution: Sendable {
    let documents: [NHSDocument]
    let signer: NHSSigner

    /// The documents as signed CDN objects (`date:` and the bytes, nhs §2), all signed at `date`.
    func objects(names: [String]? = nil, at date: Date) throws -> [CDNObject] {
        try self.documents.filter { names?.contains($0.name) ?? true }.map { document in
            try CDNObject.signedJSON(key: document.key, body: document.bytes, signer: self.signer, at: date)
        }
    }
}
