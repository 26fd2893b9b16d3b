// From a valid payload to rows: the drop window, the DSOS/TRL derivation, enrichment, key padding and the
// unencrypted check-ins' cap, filters and padding.

import Crypto
import ENKeyStore
import ENModels
import ENTestSupport
import Foundation
import Testing

@testable import SubmissionService

@Suite("Preparing a submission")
struct PreparationTests {
    static let policy = try! SubmissionFixture.configuration().policy
    static let now = SubmissionPayloads.start
    static let midnight = SubmissionPayloads.midnight

    static func key(rsin: Int) -> TemporaryExposureKey {
        var key = SubmissionPayloads.key()
        key.rollingStartIntervalNumber = Int32(rsin)
        return key
    }

    @Test("keys starting after now or before today's midnight minus the retention days are dropped; the edges are kept")
    func dropWindow() {
        let keys = [
            Self.key(rsin: Self.midnight),  // today: kept
            Self.key(rsin: Self.midnight + 144),  // tomorrow: future
            Self.key(rsin: Self.midnight - 14 * 144),  // the oldest day kept
            Self.key(rsin: Self.midnight - 15 * 144),  // one day too old
        ]
        let kept = PreparedSubmission.keysInWindow(keys, policy: Self.policy, now: Self.now)
        #expect(kept.map(\.rollingStartIntervalNumber) == [Int32(Self.midnight), Int32(Self.midnight - 14 * 144)])

        // A minute before midnight, today's key is still kept and tomorrow's still in the future.
        let lateNow = Date(timeIntervalSince1970: Double((Self.midnight + 144) * 600 - 60))
        #expect(
            PreparedSubmission.keysInWindow([Self.key(rsin: Self.midnight)], policy: Self.policy, now: lateNow).count
                == 1
        )
        #expect(
            PreparedSubmission.keysInWindow([Self.key(rsin: Self.midnight + 144)], policy: Self.policy, now: lateNow)
                .isEmpty
        )
        // At midnight, the new day's key is current.
        let atMidnight = Date(timeIntervalSince1970: Double((Self.midnight + 144) * 600))
        #expect(
            PreparedSubmission.keysInWindow([Self.key(rsin: Self.midnight + 144)], policy: Self.policy, now: atMidnight)
                .count == 1
        )

        var generator = SeededGenerator(seed: 1)
        var payload = SubmissionPayloads.payload(keys: 1)
        payload.keys += [Self.key(rsin: Self.midnight + 144)]
        let prepared = PreparedSubmission(payload: payload, policy: Self.policy, now: Self.now, using: &generator)
        #expect(prepared.keys.count == 1)
        #expect(prepared.droppedKeys == 1)
    }

    @Test(
        "the derivation map at its edges",
        arguments: [
            (-6, 1), (-5, 2), (0, 8), (6, 2), (7, 1), (193, 1), (194, 2), (205, 2), (1799, 2), (1992, 2), (2000, 5),
            (2997, 2), (3000, 4),
            (3991, 1), (3992, 2), (4000, 5), (-15, 1),
        ]
    )
    func trlFromDSOS(dsos: Int, trl: Int) {
        #expect(TEKFieldDerivations.bundled.trl(forDSOS: dsos, defaultTRL: 1) == trl)
    }

    @Test("the bundled maps are complete: 274 DSOS values, every TRL 1…8")
    func mapSizes() {
        #expect(TEKFieldDerivations.bundled.trlFromDSOS.count == 274)
        #expect(
            TEKFieldDerivations.bundled.dsosFromTRL == [
                1: 3986, 2: 3992, 3: 3993, 4: 3994, 5: 4000, 6: 3995, 7: 3996, 8: 3997,
            ]
        )
        #expect(TEKFieldDerivations.bundled.trl(forDSOS: 9999, defaultTRL: 4) == 4)
    }

    @Test("a key with only a TRL gets its DSOS from the map, one with only a DSOS its TRL, one with both keeps both")
    func derivation() {
        var policy = Self.policy
        policy.defaultTRL = 3
        #expect(
            PreparedSubmission.row(SubmissionPayloads.key(trl: 5, dsos: nil), policy: policy).daysSinceOnsetOfSymptoms
                == 4000
        )
        let fromDSOS = PreparedSubmission.row(SubmissionPayloads.key(trl: nil, dsos: 2), policy: policy)
        #expect(fromDSOS.transmissionRiskLevel == 6)
        #expect(fromDSOS.daysSinceOnsetOfSymptoms == 2)
        #expect(
            PreparedSubmission.row(SubmissionPayloads.key(trl: nil, dsos: 100), policy: policy).transmissionRiskLevel
                == 3
        )
        let both = PreparedSubmission.row(SubmissionPayloads.key(trl: 2, dsos: 1), policy: policy)
        #expect(both.transmissionRiskLevel == 2 && both.daysSinceOnsetOfSymptoms == 1)
    }

    @Test("the origin defaults to this country and is always among the visited countries")
    func enrichment() {
        var generator = SeededGenerator(seed: 2)
        var payload = SubmissionPayloads.payload(keys: 2)
        payload.clearOrigin()
        payload.visitedCountries = ["IT", "FR"]
        let prepared = PreparedSubmission(payload: payload, policy: Self.policy, now: Self.now, using: &generator)
        #expect(prepared.originCountry == "DE")
        #expect(prepared.visitedCountries == ["DE", "FR", "IT"])
        payload.visitedCountries = []
        #expect(
            PreparedSubmission(payload: payload, policy: Self.policy, now: Self.now, using: &generator).visitedCountries
                == ["DE"]
        )
    }

    @Test("key padding adds multiplier − 1 copies with fresh key data and otherwise identical fields")
    func keyPadding() {
        var generator = SeededGenerator(seed: 3)
        var policy = Self.policy
        policy.keyPaddingMultiplier = 5
        let payload = SubmissionPayloads.payload(keys: 3)
        let prepared = PreparedSubmission(payload: payload, policy: policy, now: Self.now, using: &generator)
        #expect(prepared.keys.count == 15)
        #expect(Set(prepared.keys.map(\.keyData)).count == 15)
        for key in payload.keys {
            let copies = prepared.keys.filter { $0.rollingStartIntervalNumber == key.rollingStartIntervalNumber }
            #expect(copies.count == 5)
            #expect(Set(copies.map(\.transmissionRiskLevel)).count == 1)
        }
        #expect(prepared.keys.contains { $0.keyData == Array(payload.keys[0].keyData) })
    }

    // MARK: Unencrypted check-ins

    @Test("a day with more check-ins than the cap drops all of them")
    func dailyCap() {
        var policy = CheckInPolicy()
        policy.maxPerDay = 3
        let checkIns = (0..<4).map { SubmissionPayloads.checkIn(location: UInt8($0), hoursAgo: 1 + $0) }
        #expect(CheckInFilter.accepted(checkIns, policy: policy, now: Self.now).isEmpty)
        #expect(CheckInFilter.accepted(Array(checkIns.prefix(3)), policy: policy, now: Self.now).count == 3)
    }

    @Test("check-ins without risk, ended too long ago, starting in the future or ending beyond tomorrow are filtered")
    func filters() {
        let policy = CheckInPolicy()
        let kept = SubmissionPayloads.checkIn(location: 1)
        let noRisk = SubmissionPayloads.checkIn(location: 2, trl: 2)
        let old = SubmissionPayloads.checkIn(location: 3, hoursAgo: 10 * 24 + 2)
        let future = SubmissionPayloads.checkIn(location: 4, hoursAgo: -1)
        var endless = SubmissionPayloads.checkIn(location: 6)
        endless.endIntervalNumber = .max
        let accepted = CheckInFilter.accepted([kept, noRisk, old, future, endless], policy: policy, now: Self.now)
        #expect(accepted == [kept])
    }

    @Test("each real check-in gets multiplier fakes: peppered location hashes, jitter within bounds, same TRL")
    func checkInPadding() {
        var generator = SeededGenerator(seed: 4)
        var policy = CheckInPolicy()
        policy.paddingMultiplier = 3
        policy.paddingPepper = Array("pepper".utf8)
        let checkIn = SubmissionPayloads.checkIn(location: 5, minutes: 60)
        let rows = CheckInFilter.warnings([checkIn], policy: policy, using: &generator)
        #expect(rows.count == 4)
        let realHash = Array(SHA256.hash(data: checkIn.locationID))
        let real = rows.filter { $0.traceLocationID == realHash }
        #expect(real.count == 1)
        #expect(real.first?.period == 6)
        let fakes = rows.filter { $0.traceLocationID != realHash }
        let expectedHashes = (0..<3).map {
            Array(SHA256.hash(data: Array(checkIn.locationID) + Array("pepper".utf8) + Array(String($0).utf8)))
        }
        #expect(Set(fakes.map(\.traceLocationID)) == Set(expectedHashes))
        let start = Int32(checkIn.startIntervalNumber)
        for fake in fakes {
            #expect(abs(fake.startIntervalNumber - start) <= 5)
            #expect(fake.period >= 4 && fake.period <= 8)
            #expect(fake.transmissionRiskLevel == 5)
        }
    }

    @Test("a fake never starts before its day's midnight, and a whole-day check-in keeps its period")
    func paddingEdges() {
        var generator = SeededGenerator(seed: 5)
        var policy = CheckInPolicy()
        policy.paddingMultiplier = 20
        var checkIn = SubmissionPayloads.checkIn()
        checkIn.startIntervalNumber = UInt32(Self.midnight)
        checkIn.endIntervalNumber = UInt32(Self.midnight + 144)
        let rows = CheckInFilter.warnings([checkIn], policy: policy, using: &generator)
        #expect(rows.allSatisfy { $0.startIntervalNumber >= Int32(Self.midnight) && $0.period == 144 })
        var short = SubmissionPayloads.checkIn()
        short.endIntervalNumber = short.startIntervalNumber + 1
        let shortRows = CheckInFilter.warnings([short], policy: policy, using: &generator)
        let shortHash = Array(SHA256.hash(data: short.locationID))
        #expect(shortRows.filter { $0.traceLocationID == shortHash }.map(\.period) == [1])
        #expect(shortRows.filter { $0.traceLocationID != shortHash }.allSatisfy { $0.period >= 2 })
    }

    @Test("unencrypted check-ins are ignored while they are disabled, and counted when filtered")
    func unencryptedSwitch() {
        var generator = SeededGenerator(seed: 6)
        var payload = SubmissionPayloads.payload(keys: 1)
        payload.checkIns = [SubmissionPayloads.checkIn(location: 1), SubmissionPayloads.checkIn(location: 2, trl: 1)]
        var policy = Self.policy
        let off = PreparedSubmission(payload: payload, policy: policy, now: Self.now, using: &generator)
        #expect(off.traceWarnings.isEmpty && off.filteredCheckIns == 0)
        policy.checkIns.unencryptedEnabled = true
        policy.checkIns.paddingMultiplier = 2
        let on = PreparedSubmission(payload: payload, policy: policy, now: Self.now, using: &generator)
        #expect(on.traceWarnings.count == 3)
        #expect(on.realTraceWarnings == 1)
        #expect(on.filteredCheckIns == 1)
    }
}
