// The policies of key distribution at their boundaries: expiry, shifting, buckets, the EU package, incomplete hours.

import ENKeyStore
import Testing

@testable import DistributionService

@Suite("Bundling keys")
struct KeyBundlerTests {
    /// 2026-11-20 12:00 UTC, in hours since the epoch.
    static let hour: Int64 = 20_777 * 24 + 12

    static func key(
        _ seed: UInt64,
        submittedHour: Int64 = hour,
        expiredHoursBefore: Int64 = 24,
        origin: String = "DE",
        visited: [String] = ["DE"]
    ) -> DistributionKey {
        // A key that ended `expiredHoursBefore` hours before its submission hour began.
        let expiryMinute = (submittedHour - expiredHoursBefore) * 60
        return DistributionKey(
            keyData: KeyData(high: seed, low: ~seed),
            rollingStartIntervalNumber: Int32(expiryMinute / 10 - 144),
            rollingPeriod: 144,
            transmissionRiskLevel: 6,
            submissionHour: submittedHour,
            originCountry: origin,
            visitedCountries: visited
        )
    }

    static func bundler(threshold: Int = 1, _ change: (inout KeyDistributionPolicy) -> Void = { _ in }) -> KeyBundler {
        var policy = KeyDistributionPolicy()
        policy.shiftingThreshold = threshold
        change(&policy)
        return KeyBundler(policy: policy)
    }

    @Test(
        "expiry policy: submitted up to 120 minutes after expiry waits for the hour of expiry + 180 min, later goes out at once",
        // Minutes between expiry and the submission hour's start (10-minute steps: 121 is not a possible key), and the
        // expected distribution hour relative to the submission hour.
        arguments: [(110, 1), (120, 1), (130, 0), (600, 0), (-50, 3)] as [(Int64, Int64)]
    )
    func expiryPolicy(minutesAfterExpiry: Int64, expectedDelay: Int64) {
        let expiry = Self.hour * 60 - minutesAfterExpiry
        let key = DistributionKey(
            keyData: KeyData(high: 1, low: 2),
            rollingStartIntervalNumber: Int32(expiry / 10 - 144),
            rollingPeriod: 144,
            transmissionRiskLevel: 6,
            submissionHour: Self.hour,
            originCountry: "DE",
            visitedCountries: ["DE"]
        )
        #expect(key.expiryMinute == expiry)
        #expect(Self.bundler().distributionHour(of: key) == Self.hour + expectedDelay)
    }

    @Test(
        "shifting: 139 keys wait, 140 and 141 are published in the hour that reached the threshold",
        arguments: [139, 140, 141]
    )
    func threshold(count: Int) {
        let bundler = Self.bundler(threshold: 140)
        let keys = (0..<count).map { Self.key(UInt64($0)) }
        let bundles = bundler.bundle(keys, currentHour: Self.hour + 1)
        let published = bundles["DE"]?.hours[Self.hour] ?? []
        #expect(published.count == (count >= 140 ? count : 0))
        // The walked hour is listed either way: an empty hour still gets a signed, empty file.
        #expect(bundles["DE"]?.hours.keys.contains(Self.hour) == true)
    }

    @Test("shifting carries keys over: 100 + 50 keys in consecutive hours go out together in the second hour")
    func carryOver() {
        let bundler = Self.bundler(threshold: 140)
        let first = (0..<100).map { Self.key(UInt64($0), submittedHour: Self.hour - 1) }
        // First run: only the first hour is complete; nothing reaches the threshold.
        let early = bundler.bundle(first, currentHour: Self.hour)
        #expect(early["DE"]?.hours == [Self.hour - 1: []])
        // Second run: 50 more keys in the next hour; both hours are walked and the second one reaches 150.
        let second = (100..<150).map { Self.key(UInt64($0), submittedHour: Self.hour) }
        let later = bundler.bundle(first + second, currentHour: Self.hour + 1)
        #expect(later["DE"]?.hours[Self.hour - 1]?.isEmpty == true)
        #expect(later["DE"]?.hours[Self.hour]?.count == 150)
    }

    @Test("keys of the current, incomplete hour wait unless incomplete hours are included")
    func incompleteHour() {
        let keys = (0..<3).map { Self.key(UInt64($0)) }
        #expect(Self.bundler().bundle(keys, currentHour: Self.hour)["DE"]?.hours.isEmpty == true)
        let demo = Self.bundler { $0.includeIncompleteHours = true }
        #expect(demo.bundle(keys, currentHour: Self.hour)["DE"]?.hours[Self.hour]?.count == 3)
    }

    @Test(
        "country buckets follow the visited-country rules",
        arguments: [
            // origin, visited, expected buckets
            ("DE", [String](), ["DE"]),  // legacy key without visited countries
            ("DE", ["DE"], ["DE"]),
            ("DE", ["DE", "FR"], ["DE"]),  // the origin's keys stay in its bucket
            ("FR", ["FR", "IT"], ["FR", "IT"]),  // foreign keys go to every visited country
            ("FR", ["FR", "DE"], ["DE"]),  // … but only to DE when they list DE
            ("FR", ["FR", "US"], ["FR"]),  // unsupported countries have no bucket
        ]
    )
    func buckets(origin: String, visited: [String], expected: [String]) {
        let bundler = Self.bundler()
        let buckets = bundler.buckets([Self.key(1, origin: origin, visited: visited)])
        #expect(buckets.filter { !$0.value.isEmpty }.keys.sorted() == expected.sorted())
    }

    @Test("the EU package holds every bucket's keys once; only DE and EUR are published")
    func euPackage() {
        let bundler = Self.bundler()
        let keys = [
            Self.key(1),
            Self.key(2, origin: "FR", visited: ["FR", "IT"]),
            Self.key(3, origin: "FR", visited: ["FR", "DE"]),
        ]
        let bundles = bundler.bundle(keys, currentHour: Self.hour + 1)
        #expect(bundles.keys.sorted() == ["DE", "EUR"])
        #expect(Set(bundles["DE"]?.hours[Self.hour]?.map(\.keyData.high) ?? []) == [1, 3])
        #expect((bundles["EUR"]?.hours[Self.hour]?.map(\.keyData.high) ?? []).sorted() == [1, 2, 3])
    }

    @Test("other countries' keys skip the policies unless configured: published in their submission hour")
    func foreignKeysSkipPolicies() {
        // A French key submitted right after expiry: the expiry policy would delay it by three hours.
        let fresh = Self.key(7, expiredHoursBefore: 0, origin: "FR", visited: ["FR"])
        let plain = Self.bundler(threshold: 140).bundle([fresh], currentHour: Self.hour + 1)
        #expect(plain["EUR"]?.hours[Self.hour]?.count == 1)
        let strict = Self.bundler(threshold: 140) { $0.applyPoliciesForAllCountries = true }.bundle(
            [fresh],
            currentHour: Self.hour + 1
        )
        #expect(strict["EUR"]?.hours.values.allSatisfy(\.isEmpty) ?? true)
    }

    @Test("ISO dates and day numbers round-trip, and invalid dates are refused")
    func dates() {
        #expect(DistributionTime.isoDate(day: 0) == "1970-01-01")
        #expect(DistributionTime.isoDate(day: 20_779) == "2026-11-22")
        #expect(DistributionTime.isoDate(day: 11_016) == "2000-02-29")
        for day in stride(from: Int64(18_000), to: 22_000, by: 37) {
            #expect(DistributionTime.day(isoDate: Substring(DistributionTime.isoDate(day: day))) == day)
        }
        #expect(DistributionTime.day(isoDate: "2026-02-30") == nil)
        #expect(DistributionTime.day(isoDate: "2026-1-01") == nil)
        #expect(DistributionTime.day(isoDate: "index") == nil)
    }

    // MARK: - MAX_KEYS_PER_BUNDLE

    @Test("an hour over MAX_KEYS_PER_BUNDLE keeps the cap; its other keys go into the next hours, none left out")
    func hourOverCap() {
        let bundler = Self.bundler { $0.maxKeysPerBundle = 10 }
        let keys =
            (0..<25).map { Self.key(UInt64($0)) }
            + (100..<103).map { Self.key(UInt64($0), submittedHour: Self.hour + 1) }
        let (bundles, sizes) = bundler.bundleWithSizes(keys, currentHour: Self.hour + 4)
        let hours = bundles["DE"]?.hours ?? [:]
        #expect(hours.values.allSatisfy { $0.count <= 10 })
        #expect(hours[Self.hour]?.count == 10)
        // The next hour first takes the keys that waited, then its own: 10 of 15 + 3.
        #expect(hours[Self.hour + 1]?.count == 10)
        #expect(hours[Self.hour + 2]?.count == 8)
        let published = hours.values.flatMap { $0 }.map(\.keyData)
        #expect(Set(published) == Set(keys.map(\.keyData)) && published.count == keys.count)
        // The day archive of today is not published yet; every key is in an hour archive the tree lists.
        #expect(sizes["DE"]?.heldBack == 0)
        // The smallest key data stay in their hour: a later run at the same tree plans the same files.
        let stayed = hours[Self.hour]!.map(\.keyData)
        #expect(stayed == Array(keys.prefix(25).map(\.keyData).sorted().prefix(10)))
        let later = bundler.bundle(keys, currentHour: Self.hour + 6)["DE"]?.hours ?? [:]
        #expect(later[Self.hour].map { $0.map(\.keyData) } == stayed)
    }

    @Test("keys that fit in no hour before the current one wait for a later run, counted as held back")
    func heldBackForLaterRun() {
        let bundler = Self.bundler { $0.maxKeysPerBundle = 10 }
        let keys = (0..<25).map { Self.key(UInt64($0)) }
        let (now, nowSizes) = bundler.bundleWithSizes(keys, currentHour: Self.hour + 2)
        #expect(now["DE"]?.hours.values.reduce(0) { $0 + $1.count } == 20)
        // 15 moved to later hours, and 10 of the day's 20 to a later day's archive.
        #expect(nowSizes["DE"] == KeyBundler.SizeEffect(deferred: 15 + 10, heldBack: 5))
        let (next, nextSizes) = bundler.bundleWithSizes(keys, currentHour: Self.hour + 3)
        #expect(next["DE"]?.hours[Self.hour + 2]?.count == 5)
        #expect(nextSizes["DE"]?.heldBack == 0)
    }

    @Test(
        "a day over MAX_KEYS_PER_BUNDLE: its archive keeps the cap, the rest go into the next days' archives, none left out"
    )
    func dayOverCap() {
        let bundler = Self.bundler { $0.maxKeysPerBundle = 30 }
        let day = Self.hour / 24
        // 8 keys in each of 12 hours from noon: 96 keys, hours within the cap, the day over it.
        let keys = (0..<96).map { Self.key(UInt64($0), submittedHour: day * 24 + 12 + Int64($0 / 8)) }
        // Three days later: 30 in the day's archive, 30 and 30 in the next two, 6 wait in today's.
        let (bundles, sizes) = bundler.bundleWithSizes(keys, currentHour: (day + 3) * 24 + 1)
        for folder in ["DE", "EUR"] {
            let plan = bundles[folder] ?? FolderKeys()
            #expect(plan.hours.values.allSatisfy { $0.count == 8 || $0.isEmpty }, "\(folder): hours keep their keys")
            #expect((day...(day + 3)).map { plan.days[$0]?.count ?? 0 } == [30, 30, 30, 6], "\(folder)")
            let inDays = plan.days.values.flatMap { $0 }.map(\.keyData)
            #expect(Set(inDays) == Set(keys.map(\.keyData)) && inDays.count == keys.count, "\(folder)")
        }
        // The hours of three days ago are no longer listed, today's archive not yet: 6 keys wait.
        #expect(sizes["DE"] == KeyBundler.SizeEffect(deferred: 66, heldBack: 6))
    }
}
