// A tool of a service binary (`test-result-service nhs-tokens …`, `portal-service user …`) whose command line
// swift-argument-parser reads: options, their help and their errors are declared once, on the tool's type.

package import ArgumentParser
import Foundation

/// A tool's command line as a parsed value, and the work it does. `configuration` names the tool (`commandName`) and
/// gives the line of the binary's usage text (`abstract`); the tool's settings come from the environment, as the
/// service's do.
package protocol ServiceTool: ParsableCommand, Sendable {
    /// The tool's work on the parsed line; returns the exit code.
    func run(environment: [String: String]) async -> Int32
}

/// What a tool's command line came to: the command to run (a subcommand, where the tool has them), or the exit code
/// of a line that was answered already (`--help`: 0; a line that does not parse or validate: 2).
package enum ToolLine<Command> {
    case parsed(Command)
    case exit(Int32)
}

extension ParsableCommand {
    /// Parses `arguments` (those after the tool's name) into the command, or one of its subcommands, that conforms to
    /// `Command`. `--help` prints the usage and gives 0; a line that does not parse or validate, or names a group
    /// without one of its subcommands, prints what is wrong and the usage on standard error and gives 2.
    package static func parseLine<Command>(
        _ arguments: [String],
        as _: Command.Type = Command.self
    ) -> ToolLine<Command> {
        let parsed: any ParsableCommand
        do {
            parsed = try Self.parseAsRoot(arguments)
        } catch {
            let message = Self.fullMessage(for: error)
            if Self.exitCode(for: error) == .success {
                print(message)
                return .exit(0)
            }
            FileHandle.standardError.write(Data("\(message)\n".utf8))
            return .exit(2)
        }
        if let command = parsed as? Command { return .parsed(command) }
        guard type(of: parsed) != Self.self else {
            FileHandle.standardError.write(Data("\(Self.helpMessage())\n".utf8))
            return .exit(2)
        }
        // swift-argument-parser's own help command (`help <subcommand>`, `--help`), whose run asks for the usage.
        do {
            var help = parsed
            try help.run()
        } catch {
            guard Self.exitCode(for: error) == .success else {
                FileHandle.standardError.write(Data("\(Self.fullMessage(for: error))\n".utf8))
                return .exit(2)
            }
            print(Self.fullMessage(for: error))
        }
        return .exit(0)
    }
}

extension ServiceTool {
    /// Parses `arguments` (those after the tool's name) and runs the tool, or the subcommand the line names.
    package static func run(_ arguments: [String], environment: [String: String]) async -> Int32 {
        switch Self.parseLine(arguments, as: (any ServiceTool).self) {
        case .exit(let code): return code
        case .parsed(let tool): return await tool.run(environment: environment)
        }
    }

    /// Writes `message` and a newline to standard error.
    package static func fail(_ message: String) {
        FileHandle.standardError.write(Data("\(message)\n".utf8))
    }
}

extension ServiceCommand {
    /// The command that runs `Tool`, under its `commandName`, described by its `abstract`.
    package static func tool<Tool: ServiceTool>(_ tool: Tool.Type) -> Self {
        .tool(Tool.configuration.commandName ?? "\(Tool.self)", summary: Tool.configuration.abstract) {
            arguments,
            environment in
            await Tool.run(Array(arguments.dropFirst()), environment: environment)
        }
    }
}
