// The time units of keys and submissions: ten-minute intervals and whole hours since the epoch (UTC).

import Foundation

/// Ten-minute intervals and whole hours since the epoch.
enum EpochIntervals {
    static let intervalSeconds = 600
    static let intervalsPerDay = 144

    static func interval(_ date: Date) -> Int {
        Int((date.timeIntervalSince1970 / Double(self.intervalSeconds)).rounded(.down))
    }

    static func hour(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / 3600).rounded(.down))
    }

    /// The interval of midnight UTC that begins the day of `date`.
    static func midnightInterval(_ date: Date) -> Int {
        self.interval(date) / self.intervalsPerDay * self.intervalsPerDay
    }
}
