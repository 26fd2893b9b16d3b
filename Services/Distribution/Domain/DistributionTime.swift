// Hours and days since the epoch, as the CDN tree names them.

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
