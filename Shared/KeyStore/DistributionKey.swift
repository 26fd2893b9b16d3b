// A diagnosis key as a publisher reads it: what the export needs, plus what bucketing and the policies read.

import ENModels

/// The 16 bytes of a key as two big-endian words, so that comparing values orders keys by unsigned lexicographic
/// `key_data` (cwa-server §3.4), cheaply, for a million keys.
package struct KeyData: Sendable, Hashable, Comparable, BitwiseCopyable {
    package var high: UInt64
    package var low: UInt64

    package init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The key of 16 bytes, or `nil` for any other length: for an array slice, what the audit reads millions of keys
    /// from, without the generic path's costs.
    package init?(_ bytes: ArraySlice<UInt8>) {
        guard bytes.count == 16 else { return nil }
        let start = bytes.startIndex
        var high: UInt64 = 0
        var low: UInt64 = 0
        for offset in 0..<8 {
            high = high << 8 | UInt64(bytes[start + offset])
            low = low << 8 | UInt64(bytes[start + 8 + offset])
        }
        self.init(high: high, low: low)
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
        withUnsafeBytes(of: self.high.bigEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: self.low.bigEndian) { out.append(contentsOf: $0) }
    }

    package static func < (lhs: KeyData, rhs: KeyData) -> Bool {
        lhs.high != rhs.high ? lhs.high < rhs.high : lhs.low < rhs.low
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(self.high)
        hasher.combine(self.low)
    }

    /// The hash a `Set` or `Dictionary` asks for, without the cost of a full `Hasher` (a distribution run makes
    /// millions of them): both words mixed with a random key of this process and the table's seed (multiply and
    /// xor-shift, as in splitmix64). Key data is chosen by whoever submits it; the process's key keeps the bucket of
    /// a given key unknown to them, as `Hasher`'s own random key does.
    package func _rawHashValue(seed: Int) -> Int {
        var x = (self.high ^ keyDataHashKey.0 ^ UInt64(UInt(bitPattern: seed))) &* 0x9E37_79B9_7F4A_7C15
        x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
        x ^= self.low ^ keyDataHashKey.1
        x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int(truncatingIfNeeded: x ^ (x >> 31))
    }
}

/// The random key of `KeyData`'s hash, drawn once per process.
private let keyDataHashKey: (UInt64, UInt64) = (.random(in: .min ... .max), .random(in: .min ... .max))

/// Two upper-case letters in two bytes: a country code that copies as plain memory.
package struct CountryLetters: Sendable, Hashable, BitwiseCopyable, CustomStringConvertible {
    package let raw: UInt16

    /// The first two bytes of `code` (the key store holds only codes of two upper-case letters).
    package init(_ code: String) {
        var raw: UInt16 = 0
        for byte in code.utf8.prefix(2) { raw = raw << 8 | UInt16(byte) }
        self.raw = raw
    }

    package var description: String {
        let bytes = [UInt8(truncatingIfNeeded: self.raw >> 8), UInt8(truncatingIfNeeded: self.raw)]
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A set of ISO 3166-1 alpha-2 codes as 256 bits, numbered by `CountryCode.all`. Codes outside ISO 3166-1 are not
/// kept: the countries keys are published for are ISO codes.
package struct CountrySet: Sendable, Equatable, BitwiseCopyable {
    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    /// The number of each code.
    private static let numbers: [String: Int] = {
        precondition(CountryCode.all.count <= 256, "more ISO 3166-1 codes than a CountrySet holds")
        return Dictionary(uniqueKeysWithValues: CountryCode.all.enumerated().map { ($1, $0) })
    }()

    package init() {}

    package init(_ codes: some Sequence<String>) {
        for code in codes {
            if let number = Self.number(of: code) { self.insert(number) }
        }
    }

    /// The number of `code`, or `nil` for a code outside ISO 3166-1.
    package static func number(of code: String) -> Int? {
        self.numbers[code]
    }

    package static func code(_ number: Int) -> String {
        CountryCode.all[number]
    }

    package var isEmpty: Bool {
        self.words.0 | self.words.1 | self.words.2 | self.words.3 == 0
    }

    package func contains(_ number: Int) -> Bool {
        self.word(number >> 6) & (1 << UInt64(number & 63)) != 0
    }

    package mutating func insert(_ number: Int) {
        let bit: UInt64 = 1 << UInt64(number & 63)
        switch number >> 6 {
        case 0: self.words.0 |= bit
        case 1: self.words.1 |= bit
        case 2: self.words.2 |= bit
        default: self.words.3 |= bit
        }
    }

    package func intersection(_ other: CountrySet) -> CountrySet {
        var result = CountrySet()
        result.words = (
            self.words.0 & other.words.0, self.words.1 & other.words.1, self.words.2 & other.words.2,
            self.words.3 & other.words.3
        )
        return result
    }

    /// The numbers in the set, in order.
    package var numbers: [Int] {
        var numbers: [Int] = []
        for index in 0..<4 {
            var word = self.word(index)
            while word != 0 {
                numbers.append(index * 64 + word.trailingZeroBitCount)
                word &= word - 1
            }
        }
        return numbers
    }

    /// The codes in the set, in alphabetical order.
    package var codes: [String] { self.numbers.map(Self.code) }

    private func word(_ index: Int) -> UInt64 {
        switch index {
        case 0: self.words.0
        case 1: self.words.1
        case 2: self.words.2
        default: self.words.3
        }
    }

    package static func == (lhs: CountrySet, rhs: CountrySet) -> Bool {
        lhs.words == rhs.words
    }
}

/// One stored key that passed the TRL threshold and the publishing window, in 80 bytes of plain memory: a run holds
/// millions of them and copies them into folders, hours and days.
package struct DistributionKey: Sendable, Equatable, BitwiseCopyable {
    package var keyData: KeyData
    package var rollingStartIntervalNumber: Int32
    package var rollingPeriod: Int32
    package var transmissionRiskLevel: Int32
    /// Hours since the epoch (the `submission_timestamp` column).
    package var submissionHour: Int64
    package var origin: CountryLetters
    /// The stored list of visited countries is empty (a list of codes outside ISO 3166-1 only is not).
    package var listsNoCountry: Bool
    /// The visited countries as stored, those of ISO 3166-1: submission always adds the origin; legacy or federated
    /// keys may list none.
    package var visited: CountrySet

    package init(
        keyData: KeyData,
        rollingStartIntervalNumber: Int32,
        rollingPeriod: Int32,
        transmissionRiskLevel: Int32,
        submissionHour: Int64,
        originCountry: String,
        visitedCountries: [String]
    ) {
        self.init(
            keyData: keyData,
            rollingStartIntervalNumber: rollingStartIntervalNumber,
            rollingPeriod: rollingPeriod,
            transmissionRiskLevel: transmissionRiskLevel,
            submissionHour: submissionHour,
            origin: CountryLetters(originCountry),
            visited: CountrySet(visitedCountries),
            listsNoCountry: visitedCountries.isEmpty
        )
    }

    package init(
        keyData: KeyData,
        rollingStartIntervalNumber: Int32,
        rollingPeriod: Int32,
        transmissionRiskLevel: Int32,
        submissionHour: Int64,
        origin: CountryLetters,
        visited: CountrySet,
        listsNoCountry: Bool
    ) {
        self.keyData = keyData
        self.rollingStartIntervalNumber = rollingStartIntervalNumber
        self.rollingPeriod = rollingPeriod
        self.transmissionRiskLevel = transmissionRiskLevel
        self.submissionHour = submissionHour
        self.origin = origin
        self.visited = visited
        self.listsNoCountry = listsNoCountry
    }

    package var originCountry: String { self.origin.description }

    /// The end of the key's validity, in minutes since the epoch.
    package var expiryMinute: Int64 {
        (Int64(self.rollingStartIntervalNumber) + Int64(self.rollingPeriod)) * 10
    }
}
