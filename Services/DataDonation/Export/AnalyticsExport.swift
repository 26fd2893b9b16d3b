// `data-donation-service export`: the analytics tables for health authorities, streamed to stdout.

import ENPersistence
import ENServiceKit
import Foundation
import Logging
import PostgresNIO

/// Streams the rows submitted on or after `--since` (a date, `YYYY-MM-DD`) as CSV (one table, `--table`, with a
/// header line) or JSON lines (`--table` or every analytics table, each object naming its `table`). Rows go out as
/// PostgreSQL sends them, through a 64 KiB buffer, so memory stays flat however many rows a month holds. Needs only
/// `DATABASE_URL` (read-only access suffices: the analysts' role can run it).
enum AnalyticsExport {
    /// The tables an export may read: the analytics, never OTPs, tokens, salts or Android IDs.
    static let tables = [
        "exposure_risk_metadata", "test_result_metadata", "key_submission_metadata", "exposure_window",
        "client_metadata", "nhs_mobile_analytics", "nhs_mobile_analytics_event",
    ]

    enum Format: String, CaseIterable {
        case csv, json
    }

    static func main(arguments: [String], environment: [String: String]) async -> Int32 {
        let settings = SettingsReader(arguments: arguments, environment: environment)
        let since = settings.requiredString("SINCE", help: "First submission date exported (YYYY-MM-DD).")
        let format = settings.choice("FORMAT", default: Format.csv, help: "csv or json (JSON lines).")
        let table = settings.optionalString(
            "TABLE",
            help: "The table to export (\(Self.tables.joined(separator: ", "))); csv needs one, json defaults to all."
        )
        let database = DatabaseConfiguration(settings: settings)
        if !since.isEmpty, !Self.isDate(since) { settings.report("SINCE", "must be a date, YYYY-MM-DD") }
        if let table, !Self.tables.contains(table) {
            settings.report("TABLE", "must be one of \(Self.tables.joined(separator: ", "))")
        }
        if format == .csv, table == nil { settings.report("TABLE", "is required with --format csv") }
        if settings.helpRequested {
            print("data-donation-service export\n\n\(settings.helpText)")
            return 0
        }
        do {
            try settings.finish()
        } catch {
            FileHandle.standardError.write(Data("data-donation-service export: \(error.description)\n".utf8))
            return 2
        }
        let logger = Logger(label: "data-donation-service.export")
        let output = BufferedOutput()
        do {
            let connection = try await database.connect(logger: logger)
            do {
                for name in table.map({ [$0] }) ?? Self.tables {
                    switch format {
                    case .csv: try await Self.csv(name, since: since, connection, logger, output)
                    case .json: try await Self.json(name, since: since, connection, logger, output)
                    }
                }
                try await connection.close()
            } catch {
                try? await connection.close()
                throw error
            }
            output.flush()
            return 0
        } catch {
            output.flush()
            FileHandle.standardError.write(
                Data("data-donation-service export: \(String(reflecting: error).prefix(300))\n".utf8)
            )
            return 1
        }
    }

    static func isDate(_ text: String) -> Bool {
        let parts = text.split(separator: "-")
        return text.utf8.count == 10 && parts.count == 3 && parts.allSatisfy { $0.allSatisfy(\.isNumber) }
            && DonationDate(text: text).text == text && (1...12).contains(Int(parts[1]) ?? 0)
            && (1...31).contains(Int(parts[2]) ?? 0)
    }

    /// A header of the table's column names, then one line per row, every value as PostgreSQL's text form.
    private static func csv(
        _ table: String,
        since: String,
        _ connection: PostgresConnection,
        _ logger: Logger,
        _ output: BufferedOutput
    ) async throws {
        let names = try await connection.query(
            """
            SELECT column_name::text FROM information_schema.columns
            WHERE table_schema = current_schema() AND table_name = \(table) ORDER BY ordinal_position
            """,
            logger: logger
        ).collect().map { try $0.decode(String.self) }
        output.write(names.map(Self.csvField).joined(separator: ",") + "\r\n")
        let columns = names.map { "\"\($0)\"::text" }.joined(separator: ", ")
        // The table is one of `tables` and the columns come from the catalogue; only the date is a value.
        var query = PostgresQuery(
            unsafeSQL: "SELECT \(columns) FROM \(table) WHERE submitted_at >= $1::date ORDER BY id"
        )
        query.binds.append(since)
        let rows = try await connection.query(query, logger: logger)
        for try await row in rows {
            var fields: [String] = []
            fields.reserveCapacity(names.count)
            for cell in row {
                fields.append(try cell.decode(String?.self).map(Self.csvField) ?? "")
            }
            output.write(fields.joined(separator: ",") + "\r\n")
        }
    }

    /// One JSON object per row, with `"table"` added.
    private static func json(
        _ table: String,
        since: String,
        _ connection: PostgresConnection,
        _ logger: Logger,
        _ output: BufferedOutput
    ) async throws {
        var query = PostgresQuery(
            unsafeSQL:
                "SELECT (jsonb_build_object('table', $2::text) || to_jsonb(t))::text FROM \(table) t WHERE submitted_at >= $1::date ORDER BY id"
        )
        query.binds.append(since)
        query.binds.append(table)
        let rows = try await connection.query(query, logger: logger)
        for try await line in rows.decode(String.self) {
            output.write(line + "\n")
        }
    }

    /// RFC 4180: quoted when it holds a comma, quote or line break.
    static func csvField(_ value: String) -> String {
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// Standard output in 64 KiB writes.
final class BufferedOutput {
    private var buffer: [UInt8] = []
    private let handle = FileHandle.standardOutput

    init() {
        self.buffer.reserveCapacity(1 << 16)
    }

    func write(_ text: String) {
        self.buffer.append(contentsOf: text.utf8)
        if self.buffer.count >= 1 << 16 { self.flush() }
    }

    func flush() {
        guard !self.buffer.isEmpty else { return }
        self.handle.write(Data(self.buffer))
        self.buffer.removeAll(keepingCapacity: true)
    }
}
