// The commands a service binary understands, routed by the kit's `main()`.

/// One command of a binary: `serve` (the HTTP service), a job that runs once on the service's configuration and
/// dependencies (`distribution-service run`), or a tool with a command line of its own (`portal-service user …`).
package struct ServiceCommand<Entry: ServiceEntrypoint>: Sendable {
    package enum Action: Sendable {
        case serve
        /// Runs once with the parsed configuration and the live dependencies; a thrown error is logged as
        /// `failure` and exits 1.
        case job(
            failure: String,
            @Sendable (Entry.Configuration, Entry.Dependencies, ServiceEnvironment) async throws -> Void
        )
        /// Gets the arguments after the binary's name (its own name first) and the environment; returns the
        /// exit code.
        case tool(@Sendable (_ arguments: [String], _ environment: [String: String]) async -> Int32)
    }

    package let name: String
    /// One line for the usage text.
    package let summary: String
    package let action: Action

    /// The HTTP service until SIGTERM.
    package static var serve: Self { .serve(summary: "serve the API until SIGTERM") }

    /// The HTTP service until SIGTERM, described by `summary`.
    package static func serve(summary: String) -> Self {
        Self(name: "serve", summary: summary, action: .serve)
    }

    package static func job(
        _ name: String,
        summary: String,
        failure: String,
        _ body: @escaping @Sendable (Entry.Configuration, Entry.Dependencies, ServiceEnvironment) async throws -> Void
    ) -> Self {
        Self(name: name, summary: summary, action: .job(failure: failure, body))
    }

    package static func tool(
        _ name: String,
        summary: String,
        _ body: @escaping @Sendable (_ arguments: [String], _ environment: [String: String]) async -> Int32
    ) -> Self {
        Self(name: name, summary: summary, action: .tool(body))
    }
}
