// The administrator's `user` and `audit` commands on a real database: what each line does and its exit code.

import ENServiceKit
import ENTestSupport
import Foundation
import Testing

@testable import PortalService

@Suite("Portal command lines", .postgres(PortalMigrations.group))
struct PortalCommandLineTests {
    @Test("user disable and reset-totp act on an officer and audit it; unknown officers 1; bad lines 2")
    func userAndAudit() async throws {
        try await PortalHarness.run { harness in
            try await harness.addOfficer("officer.one", roles: ["c19hotline"])
            var environment = harness.database.processEnvironment
            environment["TOTP_KEY_FILE"] = TestKeyFiles.standard
            let run = { (arguments: [String]) in await PortalCommands.run(arguments, environment: environment) }

            #expect(await run(["user", "list"]) == 0)
            #expect(await run(["user", "reset-totp", "Officer.One"]) == 0, "names are taken in lower case")
            #expect(await run(["user", "disable", "officer.one"]) == 0)
            #expect(await run(["user", "disable", "nobody.here"]) == 1)
            #expect(await run(["audit", "--since", "2020-01-01T00:00:00Z"]) == 0)
            let actions = try await harness.audit().filter { $0.username == "officer.one" }.map(\.action)
            #expect(actions.contains("totp_reset") && actions.contains("user_disabled"))
            #expect(try await harness.repository.allOfficers().first { $0.username == "officer.one" }?.disabled == true)

            #expect(await run(["user"]) == 2, "a group without its subcommand")
            #expect(await run(["user", "add", "X", "c19hotline"]) == 2, "a name of one character")
            #expect(await run(["user", "add", "officer.two", "no_such_role"]) == 2)
            #expect(await run(["user", "remove", "officer.one"]) == 2)
            #expect(await run(["audit", "--since", "yesterday"]) == 2)
            #expect(await run(["audit"]) == 2)
            #expect(try await harness.repository.allOfficers().map(\.username) == ["officer.one"])
        }
    }
}
