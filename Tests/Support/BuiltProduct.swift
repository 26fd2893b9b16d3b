// Locating the executables SwiftPM built next to the test bundle.

package import Foundation

/// Built binaries of this package, for tests that run a service as a real process.
package enum BuiltProduct {
    /// The executable `name` from the build folder the tests run from.
    package static func url(_ name: String) throws -> URL {
        var candidates: [URL] = []
        let runner = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        // .build/<triple>/debug/<package>PackageTests.xctest (a file on Linux)
        candidates.append(runner.deletingLastPathComponent().appendingPathComponent(name))
        candidates.append(runner.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(name))
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug/\(name)"))
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw BuiltProductError(name: name, searched: candidates.map(\.path))
        }
        return found
    }
}

/// The executable was not built (run `swift build` first).
package struct BuiltProductError: Error, CustomStringConvertible {
    let name: String
    let searched: [String]
    package var description: String {
        "\(self.name) not found in \(self.searched.joined(separator: ", ")); build it first"
    }
}
