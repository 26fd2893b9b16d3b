// Which key goes into which country folder and hour (cwa-server §3.3, §3.4).

import ENKeyStore

/// The keys of one country folder by distribution hour (hours since the epoch). An hour with an empty list is an
/// hour the shifting policy walked without reaching the threshold: it still gets a signed, empty file.
typealias HourlyKeys = [Int64: [DistributionKey]]

/// What one folder publishes: its hour archives and its day archives (days since the epoch), each within
/// `MAX_KEYS_PER_BUNDLE`. A day's archive holds its hours' keys, and those an earlier full day carried into it.
struct FolderKeys: Sendable, Equatable {
    var hours: HourlyKeys = [:]
    var days: [Int64: [DistributionKey]] = [:]

    /// The keys of the archives the tree lists at `currentHour`, each once, at the first hour the plan gives it: the
    /// day archives of complete days (today's too with `INCLUDE_INCOMPLETE_DAYS`) and the hour archives of the days
    /// whose hours are kept (`HOUR_FILE_RETENTION_DAYS`), as `KeyTreeAssembler` lists them.
    func listed(at currentHour: Int64, policy: KeyDistributionPolicy) -> [KeyData: (hour: Int64, origin: String)] {
        let today = DistributionTime.day(ofHour: currentHour)
        var listed: [KeyData: (hour: Int64, origin: String)] = [:]
        for (hour, keys) in self.hours
        where DistributionTime.day(ofHour: hour) > today - Int64(policy.hourFileRetentionDays) {
            for key in keys where listed[key.keyData].map({ $0.hour > hour }) ?? true {
                listed[key.keyData] = (hour, key.originCountry)
            }
        }
        for (day, keys) in self.days where day < today || policy.includeIncompleteDays {
            for key in keys where listed[key.keyData] == nil { listed[key.keyData] = (day * 24, key.originCountry) }
        }
        return listed
    }
}

/// Assigns keys to the published folders (the origin country's and the EU package), to hours and to days.
struct KeyBundler: Sendable {
    let policy: KeyDistributionPolicy

    /// The folders' hours and days for a run at `currentHour`, each within `MAX_KEYS_PER_BUNDLE`. Keys whose hour has
    /// not come yet are left for later runs.
    func bundle(_ keys: [DistributionKey], currentHour: Int64) -> [String: FolderKeys] {
        self.bundleWithSizes(keys, currentHour: currentHour).folders
    }

    /// What the cap did to one folder: keys published in a later hour (or day archive) than their own because it was
    /// full, and keys that fit in no hour up to now and wait for a later run.
    struct SizeEffect: Sendable, Equatable {
        var deferred = 0
        var heldBack = 0
    }

    /// `bundle`, with what the cap did to each folder.
    func bundleWithSizes(
        _ keys: [DistributionKey],
        currentHour: Int64
    ) -> (folders: [String: FolderKeys], sizes: [String: SizeEffect]) {
        let end = self.policy.includeIncompleteHours ? currentHour + 1 : currentHour
        var folders: [String: FolderKeys] = [:]
        var sizes: [String: SizeEffect] = [:]
        for (folder, hours) in self.uncapped(keys, currentHour: currentHour) {
            let (capped, hourEffect) = self.capped(hours, end: end)
            let (days, dayDeferred) = self.days(of: capped, through: DistributionTime.day(ofHour: end - 1))
            let planned = FolderKeys(hours: capped, days: days)
            folders[folder] = planned
            var effect = SizeEffect(deferred: hourEffect.deferred + dayDeferred)
            if hourEffect != SizeEffect() || dayDeferred > 0 {
                // Held back: keys the policies publish by now that no archive the tree lists holds yet.
                let publishable = Set(hours.values.lazy.flatMap { $0 }.map(\.keyData))
                effect.heldBack = publishable.count - planned.listed(at: currentHour, policy: self.policy).count
            }
            sizes[folder] = effect
        }
        return (folders, sizes)
    }

    /// The folders and hours before the cap.
    func uncapped(_ keys: [DistributionKey], currentHour: Int64) -> [String: HourlyKeys] {
        let buckets = self.buckets(keys)
        let end = self.policy.includeIncompleteHours ? currentHour + 1 : currentHour
        var byCountry: [String: HourlyKeys] = [:]
        for (country, members) in buckets {
            let applyPolicies = country == self.policy.originCountry || self.policy.applyPoliciesForAllCountries
            byCountry[country] =
                applyPolicies
                ? self.shifted(self.byDistributionHour(members.map { keys[$0] }), end: end)
                : self.bySubmissionHour(members.map { keys[$0] }, end: end)
        }
        var published: [String: HourlyKeys] = [self.policy.originCountry: byCountry[self.policy.originCountry] ?? [:]]
        published[self.policy.euPackageName] = self.union(of: byCountry)
        return published
    }

    /// The indices of `keys` in each country bucket (§3.3): a key without visited countries goes to the origin
    /// country; otherwise to each supported visited country, except that the origin country's keys, and foreign keys
    /// that list the origin country, go to the origin country's bucket only.
    func buckets(_ keys: [DistributionKey]) -> [String: [Int]] {
        let origin = self.policy.originCountry
        var buckets: [String: [Int]] = [:]
        for (index, key) in keys.enumerated() {
            if key.visitedCountries.isEmpty {
                buckets[origin, default: []].append(index)
                continue
            }
            let listsOrigin = key.visitedCountries.contains(origin)
            for visited in key.visitedCountries where self.policy.supportedCountries.contains(visited) {
                if visited != origin && (key.originCountry == origin || listsOrigin) { continue }
                buckets[visited, default: []].append(index)
            }
        }
        return buckets
    }

    /// For each key some bucket takes, the first hour it may be published in, the shifting policy aside: its
    /// distribution hour in a bucket with policies, its submission hour in one without; the earliest of its buckets'.
    func publishableHours(_ keys: [DistributionKey]) -> [KeyData: Int64] {
        var hours: [KeyData: Int64] = [:]
        for (country, members) in self.buckets(keys) {
            let applyPolicies = country == self.policy.originCountry || self.policy.applyPoliciesForAllCountries
            for index in members {
                let key = keys[index]
                let hour = applyPolicies ? self.distributionHour(of: key) : key.submissionHour
                hours[key.keyData] = min(hour, hours[key.keyData] ?? hour)
            }
        }
        return hours
    }

    /// The hour from which a key may be published (the expiry policy): a key submitted less than the policy's
    /// minutes after it expired waits until the hour after expiry plus those minutes; any other key is published
    /// in its submission hour.
    func distributionHour(of key: DistributionKey) -> Int64 {
        let submittedMinute = key.submissionHour * 60
        let expiry = key.expiryMinute
        let policyMinutes = Int64(self.policy.expiryPolicyMinutes)
        guard submittedMinute - expiry <= policyMinutes else { return key.submissionHour }
        return (expiry + policyMinutes + 60) / 60
    }

    func byDistributionHour(_ keys: [DistributionKey]) -> HourlyKeys {
        Dictionary(grouping: keys, by: self.distributionHour(of:))
    }

    /// The shifting policy: walking the hours from the earliest distributable one up to `end` (exclusive), keys
    /// accumulate until there are at least `shiftingThreshold`; then they are published in the hour that reached it.
    /// Every other walked hour is published empty, and keys still short of the threshold wait for a later run.
    func shifted(_ hours: HourlyKeys, end: Int64) -> HourlyKeys {
        guard let first = hours.keys.min(), first < end else { return [:] }
        var result: HourlyKeys = [:]
        var accumulated: [DistributionKey] = []
        for hour in first..<end {
            accumulated += hours[hour] ?? []
            if accumulated.count >= self.policy.shiftingThreshold {
                result[hour] = accumulated
                accumulated = []
            } else {
                result[hour] = []
            }
        }
        return result
    }

    /// Keeps every hour within `MAX_KEYS_PER_BUNDLE`, so no hour is left out of the CDN (the reference leaves out a day
    /// or hour above it, cwa-server §3.4; that is its bug, not its intent). Walking the hours before `end` in order, an
    /// hour takes at most the cap; the keys that do not fit move on to the next hour, and a key is matched in whichever
    /// file it comes. Waiting keys go first, then the hour's own, each in key-data order, so a recomputed plan keeps the
    /// files already published, as long as no carry reaches back to the first hour of the run's window (every hour
    /// over the cap for `DAYS_TO_PUBLISH` days; Services/Distribution/README.md, "No period is left out"). Keys that fit
    /// in no hour before `end` wait for a later run. An hour that only receives keys carried into it gets a file.
    func capped(_ hours: HourlyKeys, end: Int64) -> (HourlyKeys, SizeEffect) {
        let cap = self.policy.maxKeysPerBundle
        guard hours.values.contains(where: { $0.count > cap }), let first = hours.keys.min() else {
            return (hours, SizeEffect())
        }
        var result: HourlyKeys = [:]
        var effect = SizeEffect()
        var carry = Carry()
        for hour in first..<max(end, first + 1) {
            let own = hours[hour] ?? []
            guard !own.isEmpty || carry.waiting > 0 else {
                if hours[hour] != nil { result[hour] = [] }
                continue
            }
            let (taken, deferred) = carry.take(adding: own, cap: cap)
            result[hour] = taken
            effect.deferred += deferred
        }
        effect.heldBack = carry.waiting
        return (result, effect)
    }

    /// The day archives of a folder's hours: each day holds its hours' keys, but at most `MAX_KEYS_PER_BUNDLE`; the
    /// rest move on to the next day's archive (every app downloads every listed day: cwa-app-android
    /// `DayPackageSyncTool`, cwa-app-ios `KeyPackageDownload`; only today's hours are fetched), waiting keys first,
    /// each in key-data order. Keys carried past `lastDay` (the run's current day) are in no day archive yet. Returns
    /// how many keys went into a later day's archive than their own.
    func days(of hours: HourlyKeys, through lastDay: Int64) -> (days: [Int64: [DistributionKey]], deferred: Int) {
        let byDay = Dictionary(grouping: hours.keys, by: DistributionTime.day(ofHour:))
        guard let first = byDay.keys.min() else { return ([:], 0) }
        var days: [Int64: [DistributionKey]] = [:]
        var carry = Carry()
        var deferred = 0
        for day in first...max(first, lastDay) {
            let own = (byDay[day] ?? []).flatMap { hours[$0] ?? [] }
            guard byDay[day] != nil || carry.waiting > 0 else { continue }
            if carry.waiting == 0 && own.count <= self.policy.maxKeysPerBundle {
                days[day] = own
                continue
            }
            let (taken, moved) = carry.take(adding: own, cap: self.policy.maxKeysPerBundle)
            days[day] = taken
            deferred += moved
        }
        return (days, deferred)
    }

    /// The keys carried from period to period by a cap: a queue that copies each key in once and out once.
    private struct Carry {
        private var queue: [DistributionKey] = []
        private var head = 0

        /// Keys carried into the next period.
        var waiting: Int { self.queue.count - self.head }

        /// The first `cap` of the waiting keys then `own` (sorted by key data), and how many of `own` stay waiting.
        mutating func take(adding own: [DistributionKey], cap: Int) -> (taken: [DistributionKey], deferred: Int) {
            let waitingBefore = self.waiting
            self.queue.append(contentsOf: own.sorted { $0.keyData < $1.keyData })
            let count = min(self.waiting, cap)
            let taken = Array(self.queue[self.head..<(self.head + count)])
            self.head += count
            // Dropping the taken keys once they are half the queue keeps the copying linear.
            if self.head > self.queue.count / 2 {
                self.queue.removeFirst(self.head)
                self.head = 0
            }
            return (taken, own.count - max(0, count - waitingBefore))
        }
    }

    /// Other countries' keys without policies: by submission hour, before `end`.
    func bySubmissionHour(_ keys: [DistributionKey], end: Int64) -> HourlyKeys {
        Dictionary(grouping: keys.filter { $0.submissionHour < end }, by: \.submissionHour)
    }

    /// The EU package: every bucket's published keys, each key once (in the earliest hour it was published in), and
    /// every hour any bucket has, empty ones included. The origin country's bucket shares no key with the others
    /// (a key listing the origin goes there only), so only the foreign buckets need de-duplication.
    private func union(of hours: [String: HourlyKeys]) -> HourlyKeys {
        var union = hours[self.policy.originCountry] ?? [:]
        var firstHour: [KeyData: (hour: Int64, key: DistributionKey)] = [:]
        for (country, byHour) in hours where country != self.policy.originCountry {
            for (hour, keys) in byHour {
                if union[hour] == nil { union[hour] = [] }
                for key in keys {
                    if let known = firstHour[key.keyData], known.hour <= hour { continue }
                    firstHour[key.keyData] = (hour, key)
                }
            }
        }
        for (_, entry) in firstHour { union[entry.hour, default: []].append(entry.key) }
        return union
    }
}
