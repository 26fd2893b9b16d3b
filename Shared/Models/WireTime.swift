// Days and instants as the wire writes them, parsed strictly.

package import Foundation

/// The one parser of `yyyy-MM-dd` days and `yyyy-MM-ddTHH:mm:ssZ` instants for every route. A text that names no
/// real day or time (30 February, hour 24, minute or second 60) is refused, never rolled over into the next one as
/// `Date(_:strategy: .iso8601)` does; so is any other shape (an offset instead of `Z`, a missing field, signs,
/// spaces).
package enum WireTime {
    /// Midnight UTC of the `yyyy-MM-dd` day; `nil` for anything else.
    package static func day(_ text: some StringProtocol) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            let year = Self.number(bytes, 0..<4), let month = Self.number(bytes, 5..<7),
            let day = Self.number(bytes, 8..<10)
        else { return nil }
        return Self.date(year: year, month: month, day: day, hour: 0, minute: 0, second: 0)
    }

    /// The instant of `yyyy-MM-ddTHH:mm:ssZ`; with `fractionalSeconds`, also `yyyy-MM-ddTHH:mm:ss.fffZ` (1 to 9
    /// digits, as Android's `Instant.toString()` writes them). `nil` for anything else.
    package static func instant(_ text: some StringProtocol, fractionalSeconds: Bool = false) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z"), bytes[10] == UInt8(ascii: "T"),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            let midnight = Self.day(String(decoding: bytes[0..<10], as: UTF8.self)),
            let hour = Self.number(bytes, 11..<13), let minute = Self.number(bytes, 14..<16),
            let second = Self.number(bytes, 17..<19), hour < 24, minute < 60, second < 60
        else { return nil }
        var fraction = 0.0
        if bytes.count > 20 {
            let digits = bytes[20..<(bytes.count - 1)]
            guard fractionalSeconds, bytes[19] == UInt8(ascii: "."), (1...9).contains(digits.count),
                let value = Self.number(bytes, 20..<(bytes.count - 1))
            else { return nil }
            fraction = Double(value) / pow(10, Double(digits.count))
        }
        return midnight.addingTimeInterval(Double(hour * 3600 + minute * 60 + second) + fraction)
    }

    /// The decimal number of `bytes[range]`, digits only.
    private static func number(_ bytes: [UInt8], _ range: Range<Int>) -> Int? {
        var value = 0
        for byte in bytes[range] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    private static func date(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Date? {
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        guard (1...12).contains(month), day >= 1, components.isValidDate(in: Calendar.utc) else { return nil }
        return Calendar.utc.date(from: components)
    }
}

extension Calendar {
    /// The Gregorian calendar in UTC.
    package static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()
}
