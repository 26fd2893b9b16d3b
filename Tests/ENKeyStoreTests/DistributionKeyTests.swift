// The plain-memory values a distribution run holds millions of: key data, country letters and sets, the key itself.

import ENKeyStore
import Testing

@Suite("Distribution keys")
struct DistributionKeyTests {
    @Test("key data reads 16 bytes from an array, or from a slice that starts anywhere; any other length is nil")
    func keyDataFromBytes() throws {
        let bytes: [UInt8] = Array(0..<20)
        let expected = KeyData(high: 0x0203_0405_0607_0809, low: 0x0A0B_0C0D_0E0F_1011)
        #expect(KeyData(bytes[2..<18]) == expected)
        #expect(KeyData(Array(bytes[2..<18])) == expected)
        #expect(try #require(KeyData(bytes[2..<18])).bytes == Array(bytes[2..<18]))
        #expect(KeyData(bytes[2..<17]) == nil)
        #expect(KeyData(bytes[2..<19]) == nil)
        #expect(KeyData([UInt8]()) == nil)
    }

    @Test("a set of key data holds each value once and finds it again")
    func keyDataHashing() {
        var keys = Set<KeyData>()
        for value in UInt64(0)..<50_000 {
            keys.insert(KeyData(high: value >> 3, low: value & 7))
            keys.insert(KeyData(high: value >> 3, low: value & 7))
        }
        #expect(keys.count == 50_000)
        #expect(keys.contains(KeyData(high: 6_249, low: 7)))
        #expect(!keys.contains(KeyData(high: 6_250, low: 0)))
    }

    @Test("a country set keeps the ISO 3166-1 codes of a list, in order, once each, and leaves out any other")
    func countrySet() {
        let set = CountrySet(["FR", "DE", "XX", "EL", "DE", "IT"])
        #expect(set.codes == ["DE", "FR", "IT"])
        #expect(!set.isEmpty)
        #expect(CountrySet(["EL", "UK"]).isEmpty)
        #expect(CountrySet([String]()).isEmpty)
        let de = CountrySet.number(of: "DE")
        #expect(de != nil)
        #expect(de.map(set.contains) == true)
        #expect(CountrySet.number(of: "XX") == nil)
        #expect(set.intersection(CountrySet(["IT", "NL"])).codes == ["IT"])
        #expect(set == CountrySet(["IT", "FR", "DE"]))
        #expect(CountrySet(["ZW", "AD"]).codes == ["AD", "ZW"], "the first and last codes have numbers")
    }

    @Test("a key keeps its origin and visited countries as stored, and takes 80 bytes")
    func keyLayout() {
        let key = DistributionKey(
            keyData: KeyData(high: 1, low: 2),
            rollingStartIntervalNumber: 2_000_000,
            rollingPeriod: 144,
            transmissionRiskLevel: 6,
            submissionHour: 480_000,
            originCountry: "DE",
            visitedCountries: []
        )
        #expect(key.originCountry == "DE")
        #expect(key.listsNoCountry)
        #expect(key.visited.isEmpty)
        var visiting = key
        visiting.visited = CountrySet(["DE", "FR"])
        visiting.listsNoCountry = false
        #expect(visiting != key)
        #expect(CountryLetters("FR").description == "FR")
        #expect(MemoryLayout<DistributionKey>.stride == 80)
    }
}
