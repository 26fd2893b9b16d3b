// A diagnosis key as a publisher reads it: what the export needs, plus what bucketing and the policies read.

/// The 16 bytes of a key as two big-endian words, so that comparing values orders keys by unsigned lexicographic
/// `key_data` (cwa-server §3.4), cheaply, for a million keys.
package struct KeyData: Sendable, Hashable, Comparable {
    package var high: UInt64
    package var low: UInt64

    package init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The key of 16 bytes, or `nil` for any other length.
    package init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    package var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16)
        self.append(to: &out)
        return out
    }

    package func append(to out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: self.high >> UInt64(shift)))
        }
        for shift in stride(from: 56, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: self.low >> UInt64(shift)))
        }
    }

    package static func < (lhs: KeyData, rhs: KeyData) -> Bool {
        lhs.high != rhs.high ? lhs.high < rhs.high : lhs.low < rhs.low
    }
}

/// One stored key that passed the TRL threshold and the publishing window.
package struct DistributionKey: Sendable, Equatable {
    package var keyData: KeyData
    package var rollingStartIntervalNumber: Int32
    package var rollingPeriod: Int32
    package var transmissionRiskLevel: Int32
    /// Hours since the epoch (the `submission_timestamp` column).
    package var submissionHour: Int64
    package var originCountry: String
    /// As stored: submission always adds the origin; legacy or federated keys may list none.
    package var visitedCountries: [String]

    package init(
        keyData: KeyData,
        rollingStartIntervalNumber: Int32,
        rollingPeriod: Int32,
        transmissionRiskLevel: Int32,
        submissionHour: Int64,
        originCountry: String,
        visitedCountries: [String]
    ) {
        self.keyData = keyData
        self.rollingStartIntervalNumber = rollingStartIntervalNumber
        self.rollingPeriod = rollingPeriod
        self.transmissionRiskLevel = transmissionRiskLevel
        self.submissionHour = submissionHour
        self.originCountry = originCountry
        self.visitedCountries = visitedCountries
    }

    /// The end of the key's validity, in minutes since the epoch.
    package var expiryMinute: Int64 {
        (Int64(self.rollingStartIntervalNumber) + Int64(self.rollingPeriod)) * 10
    }
}
