// A tool's command line through swift-argument-parser: the subcommand it names, and the exit codes of the lines it
// answers itself.

import ArgumentParser
import ENServiceKit
import Testing

private protocol Action: ParsableCommand, Sendable {
    var label: String { get }
}

private struct Group: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "thing", subcommands: [Add.self, List.self])
}

private struct Add: Action {
    static let configuration = CommandConfiguration(commandName: "add")

    @Argument(help: "A name of 2 to 8 letters.")
    var name: String

    @Flag var quiet = false

    var label: String { "add \(self.name)\(self.quiet ? " quietly" : "")" }

    func validate() throws {
        guard (2...8).contains(self.name.count), self.name.allSatisfy(\.isLetter) else {
            throw ValidationError("a name has 2 to 8 letters")
        }
    }
}

private struct List: Action {
    static let configuration = CommandConfiguration(commandName: "list")
    var label: String { "list" }
}

@Suite("Tool command lines")
struct ServiceToolTests {
    static func outcome(_ arguments: [String]) -> String {
        switch Group.parseLine(arguments, as: (any Action).self) {
        case .parsed(let action): return action.label
        case .exit(let code): return "exit \(code)"
        }
    }

    @Test("a subcommand with its arguments is parsed into that subcommand")
    func parsed() {
        #expect(Self.outcome(["add", "alpha"]) == "add alpha")
        #expect(Self.outcome(["add", "alpha", "--quiet"]) == "add alpha quietly")
        #expect(Self.outcome(["list"]) == "list")
    }

    @Test("help is answered with 0; a bad line, an unknown subcommand or the bare group with 2")
    func answered() {
        #expect(Self.outcome(["--help"]) == "exit 0")
        #expect(Self.outcome(["add", "--help"]) == "exit 0")
        #expect(Self.outcome(["help", "add"]) == "exit 0")
        #expect(Self.outcome([]) == "exit 2")
        #expect(Self.outcome(["add"]) == "exit 2", "the name is missing")
        #expect(Self.outcome(["add", "x"]) == "exit 2", "validate refuses it")
        #expect(Self.outcome(["add", "alpha", "--loud"]) == "exit 2")
        #expect(Self.outcome(["remove", "alpha"]) == "exit 2")
    }
}
