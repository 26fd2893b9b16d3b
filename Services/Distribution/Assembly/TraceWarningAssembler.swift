// The trace-warning packages: hourly check-in reports (v2) and unencrypted warnings (v1) (cwa-server §3.5).

import ENKeyStore
import ENModels
import Foundation
import SwiftProtobuf

/// Lays out both trace-warning trees. The rows come in database-id order and only from complete hours inside the
/// retention window; every hour from the oldest to the latest hour with data gets a file, an empty hour a 0-byte one.
struct TraceWarningAssembler: Sendable {
    let region: String
    let signer: ArchiveSigner

    func plan(
        reports: [StoredCheckInReport],
        warnings: [StoredTraceWarning],
        isPublished: (String) -> Bool
    ) -> (jobs: [ArchiveJob], files: [CDNObject], unchanged: Int) {
        var jobs: [ArchiveJob] = []
        var files: [CDNObject] = []
        var unchanged = 0
        let region = self.region
        let trees: [(version: Int, byHour: [Int64: @Sendable () throws -> [UInt8]])] = [
            (
                1,
                Dictionary(grouping: warnings, by: \.submissionHour).mapValues { rows in
                    { try Self.package(hour: rows[0].submissionHour, region: region, warnings: rows) }
                }
            ),
            (
                2,
                Dictionary(grouping: reports, by: \.submissionHour).mapValues { rows in
                    { try Self.package(hour: rows[0].submissionHour, region: region, reports: rows) }
                }
            ),
        ]
        for (version, byHour) in trees {
            let oldest = byHour.keys.min()
            let latest = byHour.keys.max()
            if let oldest, let latest {
                for hour in oldest...latest {
                    let key = CDNPaths.traceWarningHour(version, self.region, hour)
                    if isPublished(key) {
                        unchanged += 1
                    } else if let content = byHour[hour] {
                        jobs.append(ArchiveJob(key: key, isDirectoryIndex: false, content: content))
                    } else {
                        files.append(.emptyFile(key))
                    }
                }
            }
            files.append(
                .index(
                    CDNPaths.traceWarningHours(version, self.region),
                    json: IndexJSON.interval(oldest: oldest, latest: latest)
                )
            )
            files.append(.index(CDNPaths.traceWarnings(version), json: IndexJSON.strings([self.region])))
        }
        return (jobs, files, unchanged)
    }

    static func package(hour: Int64, region: String, reports: [StoredCheckInReport]) throws -> [UInt8] {
        var package = TraceWarningPackage()
        package.intervalNumber = UInt32(hour)
        package.region = region
        package.checkInProtectedReports = reports.map { row in
            var report = CheckInProtectedReport()
            report.locationIDHash = Data(row.locationIDHash)
            report.iv = Data(row.initializationVector)
            report.encryptedCheckInRecord = Data(row.encryptedCheckInRecord)
            report.mac = Data(row.mac)
            return report
        }
        return try package.serializedBytes()
    }

    static func package(hour: Int64, region: String, warnings: [StoredTraceWarning]) throws -> [UInt8] {
        var package = TraceWarningPackage()
        package.intervalNumber = UInt32(hour)
        package.region = region
        package.timeIntervalWarnings = warnings.map { row in
            var warning = TraceTimeIntervalWarning()
            warning.locationIDHash = Data(row.locationIDHash)
            warning.startIntervalNumber = row.startIntervalNumber
            warning.period = row.period
            warning.transmissionRiskLevel = row.transmissionRiskLevel
            return warning
        }
        return try package.serializedBytes()
    }
}
