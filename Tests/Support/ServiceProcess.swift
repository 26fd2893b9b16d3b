// Runs a service binary as a child process and watches its output.

package import Foundation

/// A running service process. Output (stdout and stderr) is collected for assertions.
package final class ServiceProcess: @unchecked Sendable {
    // Process is not Sendable; every access goes through its own thread-safe API or happens before start.
    private let process: Process
    private let collected = Mutexed("")
    /// Set when the reader saw the end of the output.
    private let outputClosed = Mutexed(false)

    private init(process: Process) {
        self.process = process
    }

    /// Starts `executable` with exactly `environment` (nothing inherited).
    package static func start(
        _ executable: URL,
        arguments: [String] = [],
        environment: [String: String]
    ) throws -> ServiceProcess {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let service = ServiceProcess(process: process)
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                service.outputClosed.value = true
                return
            }
            service.collected.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
        return service
    }

    /// Everything the process printed so far.
    package var output: String { self.collected.value }

    /// The port a listener logged ("listener=<name> … listening on host:port"), waiting for the line to appear.
    package func waitForPort(listener: String, timeout: Duration = .seconds(60)) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            for line in self.output.split(separator: "\n")
            where line.contains("listener=\(listener) ") && line.contains("listening on") {
                if let port = line.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) })
                {
                    return port
                }
            }
            guard self.process.isRunning else { throw ServiceProcessError.exited(output: self.output) }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ServiceProcessError.timedOut(output: self.output)
    }

    package func signal(_ signal: Int32) {
        Foundation.kill(self.process.processIdentifier, signal)
    }

    /// Waits for the process to end and returns its exit status. The timeout only guards against a hang.
    package func waitForExit(timeout: Duration = .seconds(60)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while self.process.isRunning {
            guard ContinuousClock.now < deadline else { throw ServiceProcessError.timedOut(output: self.output) }
            try await Task.sleep(for: .milliseconds(20))
        }
        // Everything the process wrote is collected once the pipe reports its end. That can be late or never:
        // a child spawned concurrently by another test may have inherited this pipe's write end. So wait for it,
        // but at most 2 s, then go on with what was collected.
        let drainDeadline = ContinuousClock.now + .seconds(2)
        while !self.outputClosed.value && ContinuousClock.now < drainDeadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        return self.process.terminationStatus
    }

    /// Kills the process if it still runs (cleanup after a failed test).
    package func kill() {
        if self.process.isRunning { self.process.terminate() }
    }
}

/// Why a service process did not do what the test waited for.
package enum ServiceProcessError: Error, CustomStringConvertible {
    case exited(output: String)
    case timedOut(output: String)

    package var description: String {
        switch self {
        case .exited(let output): "process exited early; output:\n\(output)"
        case .timedOut(let output): "process did not get there in time; output:\n\(output)"
        }
    }
}
