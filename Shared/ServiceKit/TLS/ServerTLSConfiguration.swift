// TLS termination by a service itself, with optional client certificates checked against a CA.

import Foundation
package import NIOSSL

/// `TLS_CERT_FILE`, `TLS_KEY_FILE` and `TLS_CLIENT_CA_FILE`, loaded and checked at start-up.
package struct ServerTLSConfiguration: Sendable {
    package let certificateChain: [NIOSSLCertificate]
    package let privateKey: NIOSSLPrivateKey
    package let clientCertificateAuthorities: [NIOSSLCertificate]

    package init(
        certificateChain: [NIOSSLCertificate],
        privateKey: NIOSSLPrivateKey,
        clientCertificateAuthorities: [NIOSSLCertificate]
    ) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
        self.clientCertificateAuthorities = clientCertificateAuthorities
    }

    /// Reads the three file settings. Returns `nil` when none is set (plain HTTP); records a problem when only
    /// some are set or a file cannot be read. `requireClientCA` makes the CA file mandatory.
    package static func read(settings: SettingsReader, requireClientCA: Bool) -> ServerTLSConfiguration? {
        let certFile = settings.optionalString(
            "TLS_CERT_FILE",
            help: "PEM certificate chain; enables TLS on the main port."
        )
        let keyFile = settings.optionalString("TLS_KEY_FILE", help: "PEM private key of TLS_CERT_FILE.")
        let caFile = settings.optionalString(
            "TLS_CLIENT_CA_FILE",
            help: "PEM CA certificates that sign client certificates."
        )
        guard certFile != nil || keyFile != nil || caFile != nil else { return nil }
        guard let certFile, let keyFile else {
            settings.report(certFile == nil ? "TLS_CERT_FILE" : "TLS_KEY_FILE", "is required when TLS is configured")
            return nil
        }
        if requireClientCA && caFile == nil {
            settings.report("TLS_CLIENT_CA_FILE", "is required: clients authenticate with certificates")
        }
        let chain = Self.load("TLS_CERT_FILE", certFile, settings) { try NIOSSLCertificate.fromPEMFile($0) }
        let key = Self.load("TLS_KEY_FILE", keyFile, settings) { try NIOSSLPrivateKey(file: $0, format: .pem) }
        let authorities = caFile.flatMap { file in
            Self.load("TLS_CLIENT_CA_FILE", file, settings) { try NIOSSLCertificate.fromPEMFile($0) }
        }
        guard let chain, let key else { return nil }
        if chain.isEmpty { settings.report("TLS_CERT_FILE", "contains no certificate") }
        if authorities?.isEmpty == true { settings.report("TLS_CLIENT_CA_FILE", "contains no certificate") }
        return ServerTLSConfiguration(
            certificateChain: chain,
            privateKey: key,
            clientCertificateAuthorities: authorities ?? []
        )
    }

    /// TLS 1.2+ server settings. Client certificates are requested and, when presented, must chain to one of the
    /// configured authorities; whether a route needs one is decided per route (so health probes work without).
    package var nioConfiguration: TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: self.certificateChain.map { .certificate($0) },
            privateKey: .privateKey(self.privateKey)
        )
        configuration.minimumTLSVersion = .tlsv12
        if !self.clientCertificateAuthorities.isEmpty {
            configuration.trustRoots = .certificates(self.clientCertificateAuthorities)
            configuration.certificateVerification = .optionalVerification
        }
        return configuration
    }

    private static func load<Value>(
        _ name: String,
        _ path: String,
        _ settings: SettingsReader,
        _ loader: (String) throws -> Value
    ) -> Value? {
        guard FileManager.default.isReadableFile(atPath: path) else {
            settings.report(name, "names a file that does not exist or cannot be read: \(path)")
            return nil
        }
        do {
            return try loader(path)
        } catch {
            settings.report(name, "is not a valid PEM file: \(path)")
            return nil
        }
    }
}
