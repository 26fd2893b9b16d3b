// `data-donation-service export` as a process on a database of 100,000 donations: every row once, in bounded memory.

import ENTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import DataDonationService

@Suite("Analytics export", .postgres(DataDonationMigrations.group))
struct ExportTests {
    /// Runs the built binary's `export` with `arguments`; returns its exit code, the output's line count and first
    /// line, and its peak resident set (VmHWM, in KiB) read from /proc while it ran.
    static func export(
        _ arguments: [String],
        database: PostgresTestDatabase
    ) async throws -> (
        code: Int32, lines: Int, first: String, peakKiB: Int
    ) {
        // The output goes to a file, not a pipe: a pipe's write end inherited by a child another test spawns at the
        // same moment would keep its end of file from ever coming.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
            throw CocoaError(.fileWriteNoPermission)
        }
        defer { try? FileManager.default.removeItem(at: file) }
        let output = try FileHandle(forWritingTo: file)
        let process = Process()
        process.executableURL = try BuiltProduct.url("data-donation-service")
        process.arguments = ["export"] + arguments
        process.environment = database.processEnvironment
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        try output.close()
        let pid = process.processIdentifier
        var peakKiB = 0
        // Polled, never waited on with a blocking call: the peak resident set while it runs, then its exit.
        while process.isRunning {
            if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
            {
                peakKiB = max(peakKiB, kib)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let data = try Data(contentsOf: file)
        let lines = data.count { $0 == UInt8(ascii: "\n") }
        let first = String(decoding: data.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        return (process.terminationStatus, lines, first, peakKiB)
    }

    @Test("100,000 donations export as CSV and JSON lines, every row once, peak memory bounded")
    func largeExport() async throws {
        let database = try PostgresTestDatabase.require()
        try await database.client.query(
            """
            INSERT INTO exposure_window (submitted_at, platform, context, date, report_type, infectiousness,
                calibration_confidence, transmission_risk_level, normalized_time, typical_attenuations, min_attenuations,
                seconds_since_last_scans)
            SELECT current_date - (i % 10), 'android', 'new', current_date - 12, 1, 2, 1, 4, 0.5, '{60,61}', '{50,51}',
                '{300,300}'
            FROM generate_series(1, 100000) AS i
            """
        )
        try await database.client.query(
            """
            INSERT INTO exposure_risk_metadata (submitted_at, platform, risk_level, risk_level_changed, date_changed,
                pt_risk_level, pt_risk_level_changed, pt_date_changed, federal_state, age_group)
            SELECT current_date - (i % 20), 'ios', i % 4, false, false, 1, false, false, i % 17, i % 4
            FROM generate_series(1, 100000) AS i
            """
        )
        let since = DonationDate(Date().addingTimeInterval(-9 * 86_400)).text
        let csv = try await Self.export(
            ["--since", since, "--format", "csv", "--table", "exposure_window"],
            database: database
        )
        #expect(csv.code == 0)
        #expect(csv.lines == 100_001, "a header and every window of the last ten days")
        #expect(csv.first.hasPrefix("id,submitted_at,platform,context"))
        let json = try await Self.export(["--since", since, "--format", "json"], database: database)
        #expect(json.code == 0)
        #expect(json.lines == 100_000 + 50_000, "every window, and the risk rows of the last ten of twenty days")
        #expect(json.first.contains(#""table": "exposure_risk_metadata""#))
        // Holding the rows would take far more: 150,000 JSON lines alone are about 60 MB as text.
        #expect(json.peakKiB > 0)
        #expect(json.peakKiB < 100 * 1024, "peak RSS \(json.peakKiB) KiB")
        print("export peak RSS: csv \(csv.peakKiB) KiB, json \(json.peakKiB) KiB")
    }

    @Test("bad arguments exit 2 without touching the database")
    func badArguments() async throws {
        let database = try PostgresTestDatabase.require()
        #expect(try await Self.export(["--since", "yesterday"], database: database).code == 2)
        #expect(try await Self.export(["--since", "2026-01-01", "--format", "csv"], database: database).code == 2)
        #expect(
            try await Self.export(
                ["--since", "2026-01-01", "--format", "json", "--table", "one_time_password"],
                database: database
            )
            .code == 2
        )
    }
}
