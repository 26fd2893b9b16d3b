// Where the gateway is and how to reach it; every option defaults to its CWA_* environment variable.

import ArgumentParser
import Foundation

/// The value of an environment variable, or `fallback`.
func environment(_ name: String, _ fallback: String? = nil) -> String? {
    if let value = ProcessInfo.processInfo.environment[name], !value.isEmpty { return value }
    return fallback
}

/// Options every command that talks to the gateway shares.
struct GatewayOptions: ParsableArguments {
    @Option(name: .customLong("app-url"), help: "The gateway's phone server (env CWA_APP_URL).")
    var appURL: String = environment("CWA_APP_URL", "https://127.0.0.1:8443")!

    @Option(name: .customLong("ca-file"), help: "PEM CA to trust instead of the system's (env CWA_CA_FILE).")
    var caFileOption: String?

    @Option(
        name: .customLong("source-address"),
        help: "Local address to connect from, e.g. 127.0.0.7 (env CWA_SOURCE_ADDRESS)."
    )
    var sourceAddressOption: String?

    @Option(help: "Seconds to wait for an answer.")
    var timeout: Double = 30

    var app: String { self.appURL.trimmingSuffix("/") }
    var caFile: String? { self.caFileOption ?? environment("CWA_CA_FILE") }
    var sourceAddress: String? { self.sourceAddressOption ?? environment("CWA_SOURCE_ADDRESS") }

    /// A client for the gateway's servers; with a certificate and key, it presents them (the lab server).
    func client(connections: Int = 8, certificateFile: String? = nil, keyFile: String? = nil) throws -> GatewayClient {
        try GatewayClient(
            caFile: self.caFile,
            certificateFile: certificateFile,
            keyFile: keyFile,
            sourceAddress: self.sourceAddress,
            connections: connections,
            timeout: self.timeout
        )
    }
}

extension String {
    /// The string without one trailing `suffix`.
    func trimmingSuffix(_ suffix: String) -> String {
        self.hasSuffix(suffix) ? String(self.dropLast(suffix.count)) : self
    }
}
