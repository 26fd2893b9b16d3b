// Which key goes into which country folder and hour (cwa-server §3.3, §3.4).

import ENKeyStore

/// The keys of one country folder by distribution hour (hours since the epoch). An hour with an empty list is an
/// hour the shifting policy walked without reaching the threshold: it still gets a signed, empty file.
typealias HourlyKeys = [Int64: [DistributionKey]]

/// Assigns keys to the published folders (the origin country's and the EU package) and to hours.
struct KeyBundler: Sendable {
    let policy: KeyDistributionPolicy

    /// The folders and hours for a run at `currentHour`. Keys whose hour has not come yet are left for later runs.
    func bundle(_ keys: [DistributionKey], currentHour: Int64) -> [String: HourlyKeys] {
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
