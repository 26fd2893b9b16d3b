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

extension ServiceTool {
    /// Parses `arguments` (those after the tool's name) and runs the tool. `--help` prints the tool's usage and exits
    /// 0; a line that does not parse or validate prints what is wrong and the usage on standard error and exits 2.
    package static func run(_ arguments: [String], environment: [String: String]) async -> Int32 {
        let tool: Self
        do {
            tool = try Self.parse(arguments)
        } catch {
            let message = Self.fullMessage(for: error)
            if Self.exitCode(for: error) == .success {
                print(message)
                return 0
            }
            FileHandle.standardError.write(Data("\(message)\n".utf8))
            return 2
        }
        return await tool.run(environment: environment)
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
