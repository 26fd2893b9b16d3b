// The fixed parts of the Exposure Notification export format (cwa-server §3.7).

/// Names and constants of key-export archives, shared by the distribution service and the client that verifies them.
package enum ExportFile {
    /// `EK Export v1` right-padded with spaces to 16 bytes; it starts `export.bin` of key archives only.
    package static let header: [UInt8] = Array("EK Export v1    ".utf8)
    /// The signed content's entry name.
    package static let contentEntry = "export.bin"
    /// The `TEKSignatureList` entry name.
    package static let signatureEntry = "export.sig"
    /// ECDSA with SHA-256 (`1.2.840.10045.4.3.2`), the only algorithm ENF accepts.
    package static let signatureAlgorithm = "1.2.840.10045.4.3.2"
}
