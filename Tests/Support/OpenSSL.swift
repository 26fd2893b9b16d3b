// The `openssl` command line, for checks that an independent implementation agrees with ours.

package import Foundation

/// Runs `/usr/bin/openssl` in a folder of its own.
package enum OpenSSL {
    package static let path = "/usr/bin/openssl"

    package static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: self.path)
    }

    /// Runs `openssl arguments…` in `folder`; its exit status and what it printed on stdout and stderr together.
    package static func run(_ arguments: [String], in folder: URL) throws -> (status: Int32, output: String) {
        let (status, output) = try self.withOutputFile { output in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: self.path)
            process.currentDirectoryURL = folder
            process.arguments = arguments
            process.standardOutput = output
            process.standardError = output
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus
        }
        return (status, output)
    }

    /// Runs `body` with a new file for a child's output, and returns what `body` returned with what the child wrote.
    /// A file, never a pipe: a pipe's write end inherited by a long-lived child that another test spawns at the same
    /// moment (moto, a service binary) would hold off its end of file, and a thread blocked reading it, until that
    /// child exits; two such threads stall every test of the run.
    package static func withOutputFile<T>(
        _ body: (FileHandle) throws -> T
    ) throws -> (result: T, output: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("output-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
            throw CocoaError(.fileWriteNoPermission)
        }
        defer { try? FileManager.default.removeItem(at: file) }
        let handle = try FileHandle(forWritingTo: file)
        let result: T
        do {
            result = try body(handle)
        } catch {
            try? handle.close()
            throw error
        }
        try handle.close()
        return (result, String(decoding: try Data(contentsOf: file), as: UTF8.self))
    }

    /// Runs `body` with a new temporary folder, which is removed afterwards.
    package static func withFolder<T>(_ body: (URL) throws -> T) throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("openssl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try body(folder)
    }

    /// Standard Base64 of a detached CMS signature over `content` made by `openssl cms -sign -binary -outform DER`
    /// with the signer's certificate and key and `options` (`-keyopt rsa_padding_mode:pss`, `-md sha384`, `-noattr`,
    /// `-keyid`, `-stream`, …).
    package static func cmsSign(
        _ content: [UInt8],
        certificatePEM: String,
        privateKeyPEM: String,
        options: [String] = []
    ) throws -> String {
        try self.withFolder { folder in
            try Data(content).write(to: folder.appendingPathComponent("content.bin"))
            try Data(certificatePEM.utf8).write(to: folder.appendingPathComponent("signer.pem"))
            try Data(privateKeyPEM.utf8).write(to: folder.appendingPathComponent("signer.key"))
            let result = try self.run(
                [
                    "cms", "-sign", "-binary", "-in", "content.bin", "-signer", "signer.pem", "-inkey", "signer.key",
                    "-outform", "DER", "-out", "signature.der",
                ] + options,
                in: folder
            )
            guard result.status == 0 else { throw OpenSSLFailure(output: result.output) }
            return try Data(contentsOf: folder.appendingPathComponent("signature.der")).base64EncodedString()
        }
    }
}

/// `openssl` exited with an error; `output` is what it printed.
package struct OpenSSLFailure: Error, CustomStringConvertible {
    package var output: String
    package var description: String { "openssl failed: \(self.output)" }
}
