// A diagnosis key as distribution sees it: what the export needs, plus what bucketing and the policies read.

/// The 16 bytes of a key as two big-endian words, so that comparing values orders keys by unsigned lexicographic
/// `key_data` (cwa-server §3.4), cheaply, for a million keys.
struct KeyData: Sendable, Hashable, Comparable {
    var high: UInt64
    var low: UInt64

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The key of 16 bytes, or `nil` for any other length.
    init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16)
        self.append(to: &out)
        return out
    }

    func append(to out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: self.high >> UInt64(shift)))
        }
        for shift in stride(from: 56, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: self.low >> UInt64(shift)))
        }
    }

    static func < (lhs: KeyData, rhs: KeyData) -> Bool {
        lhs.high != rhs.high ? lhs.high < rhs.high : lhs.low < rhs.low
    }
}

/// One stored key that passed the TRL threshold and the publishing window.
struct DistributionKey: Sendable, Equatable {
    var keyData: KeyData
    var rollingStartIntervalNumber: Int32
    var rollingPeriod: Int32
    var transmissionRiskLevel: Int32
    /// Hours since the epoch (the `submission_timestamp` column).
    var submissionHour: Int64
    var originCountry: String
    /// As stored: submission always adds the origin; legacy or federated keys may list none.
    var visitedCountries: [String]

    /// The end of the key's validity, in minutes since the epoch.
    var expiryMinute: Int64 {
        (Int64(self.rollingStartIntervalNumber) + Int64(self.rollingPeriod)) * 10
    }
}

/// Hours and days since the epoch, UTC, as the CDN tree counts them.
enum DistributionTime {
    static func hour(_ secondsSinceEpoch: Double) -> Int64 {
        Int64((secondsSinceEpoch / 3600).rounded(.down))
    }

    static func day(ofHour hour: Int64) -> Int64 {
        hour >= 0 ? hour / 24 : (hour - 23) / 24
    }

    /// `2026-11-22` for day 20,779.
    static func isoDate(day: Int64) -> String {
        // Civil-from-days (proleptic Gregorian), so the tree never depends on a calendar or time-zone setting.
        let z = day + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let dayOfMonth = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(dayOfMonth))"
    }

    /// The day number of `YYYY-MM-DD`, or `nil` if the text is not such a date.
    static func day(isoDate text: Substring) -> Int64? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int64(parts[0]), let month = Int64(parts[1]), let dayOfMonth = Int64(parts[2]),
            (1...12).contains(month), (1...31).contains(dayOfMonth)
        else { return nil }
        let adjustedYear = month <= 2 ? year - 1 : year
        let era = (adjustedYear >= 0 ? adjustedYear : adjustedYear - 399) / 400
        let yearOfEra = adjustedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + dayOfMonth - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let day = era * 146_097 + dayOfEra - 719_468
        return self.isoDate(day: day) == text ? day : nil
    }
}
