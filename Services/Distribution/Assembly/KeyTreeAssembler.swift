// The diagnosis-key part of the CDN tree: day and hour archives per country folder and their indexes.

import ENKeyStore
import Foundation
import Logging

/// An archive to sign: its key and how to make its `export.bin`. Jobs run in parallel, one per core.
struct ArchiveJob: Sendable {
    let key: String
    let isDirectoryIndex: Bool
    let content: @Sendable () throws -> [UInt8]
}

/// Lays out the key folders (§3.4–§3.6): day archives of complete days, hour folders of the last days, indexes.
struct KeyTreeAssembler: Sendable {
    let policy: KeyDistributionPolicy
    let signer: ArchiveSigner
    let logger: Logger

    /// What a tree needs: archives to build and indexes, which are small and made directly.
    struct Plan: Sendable {
        var jobs: [ArchiveJob] = []
        var indexes: [CDNObject] = []
        /// Key files already published, which are never rewritten (§3.8) and so are not built again.
        var unchanged = 0
        /// The keys of the EU package's key files (which hold every published key): those in files this plan
        /// builds, and those in files already published. A key in the first and not the second is published for the
        /// first time by this run.
        var building: Set<KeyData> = []
        var onCDN: Set<KeyData> = []
    }

    /// The plan for `bundles` at `currentHour`. `isPublished` tells which key files exist already; they are listed in
    /// the indexes but not rebuilt.
    func plan(_ bundles: [String: FolderKeys], currentHour: Int64, isPublished: (String) -> Bool) -> Plan {
        var plan = Plan()
        let today = DistributionTime.day(ofHour: currentHour)
        let countries = [self.policy.originCountry, self.policy.euPackageName]
        for country in countries {
            let folder = bundles[country] ?? FolderKeys()
            let hours = folder.hours
            var days = Dictionary(grouping: hours.keys, by: DistributionTime.day(ofHour:))
            for day in folder.days.keys where days[day] == nil { days[day] = [] }
            var listedDays: [Int64] = []
            for (day, dayHours) in days.sorted(by: { $0.key < $1.key }) {
                let sortedHours = dayHours.sorted()
                // The bundler's day archive: the day's hours' keys within the cap, and what a full day carried in.
                if day < today || self.policy.includeIncompleteDays {
                    let keys = folder.days[day] ?? sortedHours.flatMap { hours[$0] ?? [] }
                    listedDays.append(day)
                    self.add(
                        CDNPaths.day(country, day),
                        keys: keys,
                        region: country,
                        window: day * 86_400..<(day + 1) * 86_400,
                        isDirectoryIndex: true,
                        to: &plan,
                        isPublished: isPublished
                    )
                }
                guard day > today - Int64(self.policy.hourFileRetentionDays) else { continue }
                var listedHours: [Int64] = []
                for hour in sortedHours {
                    let keys = hours[hour] ?? []
                    listedHours.append(hour - day * 24)
                    self.add(
                        CDNPaths.hour(country, hour),
                        keys: keys,
                        region: country,
                        window: hour * 3600..<(hour + 1) * 3600,
                        isDirectoryIndex: false,
                        to: &plan,
                        isPublished: isPublished
                    )
                }
                plan.indexes.append(.index(CDNPaths.hours(country, day), json: IndexJSON.numbers(listedHours)))
            }
            plan.indexes.append(
                .index(CDNPaths.dates(country), json: IndexJSON.strings(listedDays.map(DistributionTime.isoDate(day:))))
            )
        }
        plan.indexes.append(.index(CDNPaths.keyCountries, json: IndexJSON.strings(countries.sorted())))
        return plan
    }

    private func add(
        _ key: String,
        keys: [DistributionKey],
        region: String,
        window: Range<Int64>,
        isDirectoryIndex: Bool,
        to plan: inout Plan,
        isPublished: (String) -> Bool
    ) {
        let tracked = region == self.policy.euPackageName
        if isPublished(key) {
            plan.unchanged += 1
            if tracked { plan.onCDN.formUnion(keys.lazy.map(\.keyData)) }
            return
        }
        if tracked { plan.building.formUnion(keys.lazy.map(\.keyData)) }
        let infos = self.signer.signatureInfos
        plan.jobs.append(
            ArchiveJob(key: key, isDirectoryIndex: isDirectoryIndex) {
                KeyExportEncoder.exportBin(
                    keys: keys,
                    region: region,
                    start: UInt64(window.lowerBound),
                    end: UInt64(window.upperBound),
                    signatureInfos: infos
                )
            }
        )
    }
}

extension ArchiveSigner {
    /// Builds and signs every job, `width` at a time, and returns the archives in job order.
    func run(
        _ jobs: [ArchiveJob],
        width: Int = max(1, ProcessInfo.processInfo.activeProcessorCount)
    ) async throws -> [CDNObject] {
        try await boundedMap(jobs, width: width) { job in
            try CDNObject.archive(
                job.key,
                content: try job.content(),
                signer: self,
                isDirectoryIndex: job.isDirectoryIndex
            )
        }
    }
}
