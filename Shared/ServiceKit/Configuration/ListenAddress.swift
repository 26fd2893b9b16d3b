// A host and port to listen on.

/// Where a server listens. `HTTP_HOST`/`HTTP_PORT` for the main port, `INTERNAL_HTTP_HOST`/`INTERNAL_HTTP_PORT`
/// for the internal one.
package struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    package var host: String
    package var port: Int

    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Reads `<PREFIX>_HOST` and `<PREFIX>_PORT` (port 0 picks a free port, for tests).
    package init(
        settings: SettingsReader,
        prefix: String,
        defaultHost: String = "127.0.0.1",
        defaultPort: Int,
        purpose: String
    ) {
        self.host = settings.string("\(prefix)_HOST", default: defaultHost, help: "Address the \(purpose) listens on.")
        self.port = settings.int(
            "\(prefix)_PORT",
            default: defaultPort,
            range: 0...65535,
            help: "Port of the \(purpose)."
        )
    }

    /// Whether only this machine can connect: an IPv4 address in 127.0.0.0/8, `::1`, or `localhost`.
    package var isLoopback: Bool {
        if self.host == "localhost" || self.host == "::1" { return true }
        let octets = self.host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.first == "127" && octets.allSatisfy { UInt8($0) != nil && $0.count <= 3 }
    }

    /// Reports `setting` when this listener's port equals one of `others` (port 0, a free port each, never clashes).
    package func requireDistinctPort(
        from others: [ListenAddress],
        settings: SettingsReader,
        setting: String = "INTERNAL_HTTP_PORT",
        problem: String = "must differ from HTTP_PORT"
    ) {
        if self.port != 0 && others.contains(where: { $0.port == self.port }) {
            settings.report(setting, problem)
        }
    }

    package var description: String {
        self.host.contains(":") ? "[\(self.host)]:\(self.port)" : "\(self.host):\(self.port)"
    }
}
