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
    func listed(
        at currentHour: Int64,
        policy: KeyDistributionPolicy
    ) -> [KeyData: (hour: Int64, origin: CountryLetters)] {
        let today = DistributionTime.day(ofHour: currentHour)
        var listed: [KeyData: (hour: Int64, origin: CountryLetters)] = [:]
        for (hour, keys) in self.hours
        where DistributionTime.day(ofHour: hour) > today - Int64(policy.hourFileRetentionDays) {
            for key in keys where listed[key.keyData].map({ $0.hour > hour }) ?? true {
                listed[key.keyData] = (hour, key.origin)
            }
        }
        for (day, keys) in self.days where day < today || policy.includeIncompleteDays {
            for key in keys where listed[key.keyData] == nil { listed[key.keyData] = (day * 24, key.origin) }
        }
        return listed
    }
}

/// Assigns keys to the published folders (the origin country's and the EU package), to hours and to days.
struct KeyBundler: Sendable {
    let policy: KeyDistributionPolicy
    /// The policy's countries as `DistributionKey` holds them.
    private let supported: CountrySet
    private let originNumber: Int?
    private let originLetters: CountryLetters

    init(policy: KeyDistributionPolicy) {
        self.policy = policy
        self.supported = CountrySet(policy.supportedCountries)
        self.originNumber = CountrySet.number(of: policy.originCountry)
        self.originLetters = CountryLetters(policy.originCountry)
    }

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
        let today = DistributionTime.day(ofHour: currentHour)
        let listing = Listing(
            firstListedHour: (today - Int64(self.policy.hourFileRetentionDays) + 1) * 24,
            firstUnlistedDay: self.policy.includeIncompleteDays ? .max : today
        )
        for (folder, hours) in self.uncapped(keys, currentHour: currentHour) {
            let (capped, hourEffect) = self.capped(hours, end: end)
            let days = self.days(of: capped, through: DistributionTime.day(ofHour: end - 1), listing: listing)
            folders[folder] = FolderKeys(hours: capped, days: days.days)
            // Held back: keys the policies publish by now that no archive the tree lists holds yet: those the hours
            // carried past the last one, and those in no listed hour whose day archive is not listed either.
            sizes[folder] = SizeEffect(
                deferred: hourEffect.deferred + days.deferred,
                heldBack: hourEffect.heldBack + days.unlisted
            )
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
                ? self.shifted(Self.grouped(members, of: keys, by: self.distributionHour(of:)), end: end)
                : Self.grouped(members.filter { keys[$0].submissionHour < end }, of: keys, by: \.submissionHour)
        }
        var published: [String: HourlyKeys] = [self.policy.originCountry: byCountry[self.policy.originCountry] ?? [:]]
        published[self.policy.euPackageName] = self.union(of: byCountry)
        return published
    }

    /// The indices of `keys` in each country bucket (§3.3): a key without visited countries goes to the origin
    /// country; otherwise to each supported visited country, except that the origin country's keys, and foreign keys
    /// that list the origin country, go to the origin country's bucket only.
    func buckets(_ keys: [DistributionKey]) -> [String: [Int]] {
        var origin: [Int] = []
        var foreign: [[Int]] = Array(repeating: [], count: 256)
        for (index, key) in keys.enumerated() {
            let placement = self.placement(of: key)
            if placement.origin { origin.append(index) }
            for number in placement.foreign.numbers { foreign[number].append(index) }
        }
        var buckets: [String: [Int]] = [:]
        if !origin.isEmpty { buckets[self.policy.originCountry] = origin }
        for (number, members) in foreign.enumerated() where !members.isEmpty {
            buckets[CountrySet.code(number)] = members
        }
        return buckets
    }

    /// Whether `key` goes into the origin country's bucket, and the other countries' buckets it goes into.
    private func placement(of key: DistributionKey) -> (origin: Bool, foreign: CountrySet) {
        guard !key.listsNoCountry else { return (true, CountrySet()) }
        let visited = key.visited.intersection(self.supported)
        guard let origin = self.originNumber else { return (false, visited) }
        let listsOrigin = key.visited.contains(origin)
        guard key.origin != self.originLetters && !listsOrigin else { return (visited.contains(origin), CountrySet()) }
        return (false, visited)
    }

    /// The first hour `key` may be published in, the shifting policy aside, or `nil` when no bucket takes it: its
    /// distribution hour in a bucket with policies, its submission hour in one without; the earliest of its buckets'
    /// (the buckets as `buckets` assigns them).
    func publishableHour(of key: DistributionKey) -> Int64? {
        let placement = self.placement(of: key)
        if placement.origin || (!placement.foreign.isEmpty && self.policy.applyPoliciesForAllCountries) {
            return self.distributionHour(of: key)
        }
        return placement.foreign.isEmpty ? nil : key.submissionHour
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

    /// The keys at `members` by the hour `hour` gives each, copied once.
    private static func grouped(
        _ members: [Int],
        of keys: [DistributionKey],
        by hour: (DistributionKey) -> Int64
    ) -> HourlyKeys {
        Dictionary(grouping: members) { hour(keys[$0]) }.mapValues { $0.map { keys[$0] } }
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
            let taken = carry.take(adding: own, cap: cap)
            result[hour] = taken.keys
            effect.deferred += taken.deferred
        }
        effect.heldBack = carry.waiting
        return (result, effect)
    }

    /// The day archives of a folder's hours: each day holds its hours' keys, but at most `MAX_KEYS_PER_BUNDLE`; the
    /// rest move on to the next day's archive (every app downloads every listed day: cwa-app-android
    /// `DayPackageSyncTool`, cwa-app-ios `KeyPackageDownload`; only today's hours are fetched), waiting keys first,
    /// each in key-data order. Keys carried past `lastDay` (the run's current day) are in no day archive yet. Returns
    /// how many keys went into a later day's archive than their own, and how many the tree lists in neither an hour
    /// nor a day archive by `listing`.
    func days(
        of hours: HourlyKeys,
        through lastDay: Int64,
        listing: Listing = Listing(firstListedHour: .max, firstUnlistedDay: .max)
    ) -> (days: [Int64: [DistributionKey]], deferred: Int, unlisted: Int) {
        let byDay = Dictionary(grouping: hours.keys, by: DistributionTime.day(ofHour:))
        guard let first = byDay.keys.min() else { return ([:], 0, 0) }
        var days: [Int64: [DistributionKey]] = [:]
        var carry = Carry()
        var deferred = 0
        var unlisted = 0
        for day in first...max(first, lastDay) {
            let dayHours = (byDay[day] ?? []).sorted()
            guard !dayHours.isEmpty || carry.waiting > 0 else { continue }
            var own: [DistributionKey] = []
            // Whether each of `own` is in an hour archive the tree does not list.
            var unlistedHour: [Bool] = []
            for hour in dayHours {
                let keys = hours[hour] ?? []
                own += keys
                unlistedHour += repeatElement(hour < listing.firstListedHour, count: keys.count)
            }
            let dayListed = day < listing.firstUnlistedDay
            if carry.waiting == 0 && own.count <= self.policy.maxKeysPerBundle {
                days[day] = own
                if !dayListed { unlisted += unlistedHour.count { $0 } }
                continue
            }
            let taken = carry.take(adding: own, marks: unlistedHour, cap: self.policy.maxKeysPerBundle)
            days[day] = taken.keys
            if !dayListed { unlisted += taken.marked }
            deferred += taken.deferred
        }
        return (days, deferred, unlisted + carry.markedWaiting)
    }

    /// Which archives the tree lists: the hour archives from `firstListedHour` on, the day archives before
    /// `firstUnlistedDay`.
    struct Listing: Sendable, Equatable {
        var firstListedHour: Int64
        var firstUnlistedDay: Int64
    }

    /// The keys carried from period to period by a cap: a queue that copies each key in once and out once, with a mark
    /// per key (whether it is in an unlisted hour archive).
    private struct Carry {
        private var queue: [DistributionKey] = []
        private var marks: [Bool] = []
        private var head = 0
        /// Marked keys among those waiting.
        private(set) var markedWaiting = 0

        /// Keys carried into the next period.
        var waiting: Int { self.queue.count - self.head }

        /// The first `cap` of the waiting keys then `own` (sorted by key data, each with its mark from `marks`, none
        /// when empty): the keys taken, how many of them are marked, and how many of `own` stay waiting.
        mutating func take(
            adding own: [DistributionKey],
            marks: [Bool] = [],
            cap: Int
        ) -> (keys: [DistributionKey], marked: Int, deferred: Int) {
            let waitingBefore = self.waiting
            // Nothing waits and everything fits: the period keeps its keys as they are (an archive sorts its keys).
            if waitingBefore == 0 && own.count <= cap {
                return (own, marks.count { $0 }, 0)
            }
            // Sorted as (key data, position) pairs: moving 24 bytes instead of a key.
            var order = own.indices.map { (own[$0].keyData, Int32($0)) }
            order.sort { $0.0 < $1.0 }
            self.queue.reserveCapacity(self.queue.count + own.count)
            for (_, index) in order {
                self.queue.append(own[Int(index)])
                let mark = !marks.isEmpty && marks[Int(index)]
                self.marks.append(mark)
                if mark { self.markedWaiting += 1 }
            }
            let count = min(self.waiting, cap)
            let range = self.head..<(self.head + count)
            let taken = Array(self.queue[range])
            let marked = self.marks[range].count { $0 }
            self.markedWaiting -= marked
            self.head += count
            // Dropping the taken keys once they are half the queue keeps the copying linear.
            if self.head > self.queue.count / 2 {
                self.queue.removeFirst(self.head)
                self.marks.removeFirst(self.head)
                self.head = 0
            }
            return (taken, marked, own.count - max(0, count - waitingBefore))
        }
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
