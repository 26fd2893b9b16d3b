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
        let published = bundles["DE"]?[Self.hour] ?? []
        #expect(published.count == (count >= 140 ? count : 0))
        // The walked hour is listed either way: an empty hour still gets a signed, empty file.
        #expect(bundles["DE"]?.keys.contains(Self.hour) == true)
    }

    @Test("shifting carries keys over: 100 + 50 keys in consecutive hours go out together in the second hour")
    func carryOver() {
        let bundler = Self.bundler(threshold: 140)
        let first = (0..<100).map { Self.key(UInt64($0), submittedHour: Self.hour - 1) }
        // First run: only the first hour is complete; nothing reaches the threshold.
        let early = bundler.bundle(first, currentHour: Self.hour)
        #expect(early["DE"] == [Self.hour - 1: []])
        // Second run: 50 more keys in the next hour; both hours are walked and the second one reaches 150.
        let second = (100..<150).map { Self.key(UInt64($0), submittedHour: Self.hour) }
        let later = bundler.bundle(first + second, currentHour: Self.hour + 1)
        #expect(later["DE"]?[Self.hour - 1]?.isEmpty == true)
        #expect(later["DE"]?[Self.hour]?.count == 150)
    }

    @Test("keys of the current, incomplete hour wait unless incomplete hours are included")
    func incompleteHour() {
        let keys = (0..<3).map { Self.key(UInt64($0)) }
        #expect(Self.bundler().bundle(keys, currentHour: Self.hour)["DE"]?.isEmpty == true)
        let demo = Self.bundler { $0.includeIncompleteHours = true }
        #expect(demo.bundle(keys, currentHour: Self.hour)["DE"]?[Self.hour]?.count == 3)
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
        #expect(Set(bundles["DE"]?[Self.hour]?.map(\.keyData.high) ?? []) == [1, 3])
        #expect((bundles["EUR"]?[Self.hour]?.map(\.keyData.high) ?? []).sorted() == [1, 2, 3])
    }

    @Test("other countries' keys skip the policies unless configured: published in their submission hour")
    func foreignKeysSkipPolicies() {
        // A French key submitted right after expiry: the expiry policy would delay it by three hours.
        let fresh = Self.key(7, expiredHoursBefore: 0, origin: "FR", visited: ["FR"])
        let plain = Self.bundler(threshold: 140).bundle([fresh], currentHour: Self.hour + 1)
        #expect(plain["EUR"]?[Self.hour]?.count == 1)
        let strict = Self.bundler(threshold: 140) { $0.applyPoliciesForAllCountries = true }.bundle(
            [fresh],
            currentHour: Self.hour + 1
        )
        #expect(strict["EUR"]?.values.allSatisfy(\.isEmpty) ?? true)
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
}
