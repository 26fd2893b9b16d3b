// The cwa command-line client: a lab, a phone, an officer, an archive verifier and a load generator, always talking
// to the suite from outside, through the gateway.

import ArgumentParser

/// `cwa`: the tool a tester, an operator or a load test uses against a running fleet (`make run`, `make e2e`).
@main
struct CWA: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cwa",
        abstract: "Talk to the exposure-notification suite through its gateway, as a lab, a phone or an officer.",
        discussion: """
            Addresses and credentials default to the CWA_* environment variables that
            `deploy/local/run.sh env` prints for a running fleet: eval "$(deploy/local/run.sh env)".
            """,
        subcommands: [
            LabCommand.self, PhoneCommand.self, OfficerCommand.self, NHSCommand.self, VerifyArchiveCommand.self,
            LoadCommand.self, PrivacyCheck.self, PrivacyPool.self, DrillCommand.self,
        ]
    )
}
