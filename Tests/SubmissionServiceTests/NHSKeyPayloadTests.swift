// The NHS diagnosis key payload (nhs §4): what is dropped whole, what is dropped key by key, and the rows stored.

import ENKeyStore
import ENModels
import ENNHS
import ENServiceKit
import Foundation
import Testing

@testable import SubmissionService

@Suite("NHS key payload")
struct NHSKeyPayloadTests {
    /// 2020-09-13T12:26:40Z.
    static let epoch = 1_600_000_000
    static let now = Date(timeIntervalSince1970: TimeInterval(Self.epoch))
    /// The current 10-minute interval.
    static let now10 = Self.epoch / 600
    /// The interval 14 days ago.
    static let min10 = (Self.epoch - 14 * 86_400) / 600
    /// The start of today's key.
    static let midnight = Self.now10 / 144 * 144

    static let token = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
    static let keyData = Data(repeating: 7, count: 16)

    /// A valid key as the app sends it, with `changes` applied (a `nil` removes the field).
    static func key(_ changes: [String: Any?] = [:]) -> [String: Any] {
        var key: [String: Any] = [
            "key": Self.keyData.base64EncodedString(),
            "rollingStartNumber": Self.midnight,
            "rollingPeriod": 144,
            "transmissionRiskLevel": 4,
            "daysSinceOnsetOfSymptoms": 2,
        ]
        for (name, value) in changes {
            key[name] = value
        }
        return key
    }

    /// A key that passes, told apart from `key()` by its data.
    static func otherKey() -> [String: Any] {
        Self.key(["key": Data(repeating: 9, count: 16).base64EncodedString()])
    }

    /// The JSON of `object`.
    static func json(_ object: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object)
    }

    /// The JSON of `array`.
    static func json(array: [Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: array)
    }

    /// A body with `keys` under the test token.
    static func body(_ keys: [Any], token: String = Self.token) throws -> Data {
        try Self.json(["diagnosisKeySubmissionToken": token, "temporaryExposureKeys": keys])
    }

    static func parse(_ data: Data) -> NHSKeyPayload? {
        NHSKeyPayload.parse(data, now: Self.now)
    }

    /// The key data of what passed when `key` is sent after a valid `otherKey()`.
    static func survivors(of key: [String: Any]) throws -> [[UInt8]] {
        let payload = try #require(Self.parse(try Self.body([Self.otherKey(), key])))
        return payload.keys.map(\.keyData)
    }

    static let other = Array(Data(repeating: 9, count: 16))
    static let valid = Array(Self.keyData)

    @Test("the fixed clock's intervals")
    func intervals() {
        #expect(Self.now10 == 2_666_666)
        #expect(Self.min10 == 2_664_650)
        #expect(Self.midnight == 2_666_592)
    }

    @Test("one valid key is stored with its fields, under the token in lower case")
    func oneKey() throws {
        let payload = try #require(Self.parse(try Self.body([Self.key()], token: Self.token.uppercased())))
        #expect(payload.token == Self.token)
        #expect(
            payload.keys == [
                NHSKeyPayload.NHSKey(
                    keyData: Self.valid,
                    rollingStartNumber: Int32(Self.midnight),
                    rollingPeriod: 144,
                    transmissionRiskLevel: 4,
                    daysSinceOnsetOfSymptoms: 2
                )
            ]
        )
    }

    @Test("14 keys are taken; 15 drop the whole payload, even when one of them is invalid")
    func keyCount() throws {
        let fourteen = try #require(Self.parse(try Self.body(Array(repeating: Self.key(), count: 14))))
        #expect(fourteen.keys.count == 14)
        #expect(Self.parse(try Self.body(Array(repeating: Self.key(), count: 15))) == nil)
        let withInvalid = Array(repeating: Self.key(), count: 14) + [Self.key(["rollingPeriod": 0])]
        #expect(Self.parse(try Self.body(withInvalid)) == nil)
    }

    @Test(
        "a token that is no UUID drops the payload",
        arguments: [
            "not-a-uuid", "", "3f2504e0-4f89-41d3-9a0c-0305e82c330", "3f2504e04f8941d39a0c0305e82c3301",
            "3f2504e0-4f89-41d3-9a0c-0305e82c3301x", "g f2504e0-4f89-41d3-9a0c-0305e82c330",
        ]
    )
    func badToken(token: String) throws {
        #expect(Self.parse(try Self.body([Self.key()], token: token)) == nil)
    }

    @Test("a missing or malformed token or key list, or a body that is no JSON object, drops the payload")
    func badBody() throws {
        #expect(Self.parse(try Self.json(["temporaryExposureKeys": [Self.key()]])) == nil)
        #expect(
            Self.parse(try Self.json(["diagnosisKeySubmissionToken": 12, "temporaryExposureKeys": [Self.key()]])) == nil
        )
        #expect(Self.parse(try Self.json(["diagnosisKeySubmissionToken": Self.token])) == nil)
        #expect(
            Self.parse(try Self.json(["diagnosisKeySubmissionToken": Self.token, "temporaryExposureKeys": NSNull()]))
                == nil
        )
        #expect(
            Self.parse(try Self.json(["diagnosisKeySubmissionToken": Self.token, "temporaryExposureKeys": Self.key()]))
                == nil
        )
        #expect(Self.parse(try Self.body([])) == nil, "no key at all")
        #expect(Self.parse(try Self.json(array: [Self.key()])) == nil)
        #expect(Self.parse(Data("{not json".utf8)) == nil)
        #expect(Self.parse(Data()) == nil)
    }

    @Test("key data of other than 16 bytes, or not Base64, drops that key", arguments: [0, 15, 17, 31, 32])
    func keyLength(bytes: Int) throws {
        let key = Self.key(["key": Data(repeating: 7, count: bytes).base64EncodedString()])
        #expect(try Self.survivors(of: key) == [Self.other])
        #expect(Self.parse(try Self.body([key])) == nil)
    }

    @Test("key data that is not Base64 drops that key")
    func keyNotBase64() throws {
        #expect(try Self.survivors(of: Self.key(["key": "not base64!"])) == [Self.other])
    }

    @Test("a rolling period outside 1…144 drops the key", arguments: [0, 145, -1, 288])
    func badPeriod(period: Int) throws {
        #expect(try Self.survivors(of: Self.key(["rollingPeriod": period])) == [Self.other])
    }

    @Test("rolling periods 1 and 144 pass", arguments: [1, 144])
    func periodBounds(period: Int) throws {
        let payload = try #require(Self.parse(try Self.body([Self.key(["rollingPeriod": period])])))
        #expect(payload.keys.map(\.rollingPeriod) == [Int32(period)])
    }

    @Test("a key starting after the current interval is dropped; one starting in it passes")
    func startsInFuture() throws {
        let late = Self.key(["rollingStartNumber": Self.now10 + 1, "rollingPeriod": 1])
        #expect(try Self.survivors(of: late) == [Self.other])
        let current = Self.key(["rollingStartNumber": Self.now10, "rollingPeriod": 1])
        #expect(try Self.survivors(of: current) == [Self.other, Self.valid])
    }

    @Test("a key ending before the interval of 14 days ago is dropped; one ending at it passes")
    func endsTooEarly() throws {
        let old = Self.key(["rollingStartNumber": Self.min10 - 145, "rollingPeriod": 144])
        #expect(try Self.survivors(of: old) == [Self.other])
        let edge = Self.key(["rollingStartNumber": Self.min10 - 144, "rollingPeriod": 144])
        #expect(try Self.survivors(of: edge) == [Self.other, Self.valid])
    }

    @Test("a transmission risk level outside 0…7 drops the key", arguments: [8, -1, 100])
    func badRisk(level: Int) throws {
        #expect(try Self.survivors(of: Self.key(["transmissionRiskLevel": level])) == [Self.other])
    }

    @Test("transmission risk levels 0…7 pass; an absent one is 7")
    func risk() throws {
        for level in 0...7 {
            let payload = try #require(Self.parse(try Self.body([Self.key(["transmissionRiskLevel": level])])))
            #expect(payload.keys.map(\.transmissionRiskLevel) == [Int32(level)])
        }
        let absent = try #require(Self.parse(try Self.body([Self.key(["transmissionRiskLevel": nil])])))
        #expect(absent.keys.map(\.transmissionRiskLevel) == [7])
    }

    @Test("days since onset are optional and must be within -14…4000")
    func onset() throws {
        let absent = try #require(Self.parse(try Self.body([Self.key(["daysSinceOnsetOfSymptoms": nil])])))
        #expect(absent.keys.map(\.daysSinceOnsetOfSymptoms) == [nil])
        for days in [-14, 0, 4000] {
            let payload = try #require(Self.parse(try Self.body([Self.key(["daysSinceOnsetOfSymptoms": days])])))
            #expect(payload.keys.map(\.daysSinceOnsetOfSymptoms) == [Int32(days)])
        }
        for days in [-15, 4001] {
            #expect(try Self.survivors(of: Self.key(["daysSinceOnsetOfSymptoms": days])) == [Self.other])
        }
    }

    @Test("a field that does not decode drops that key only")
    func undecodableField() throws {
        let broken: [[String: Any?]] = [
            ["rollingStartNumber": String(Self.midnight)],
            ["rollingPeriod": "144"],
            ["transmissionRiskLevel": "4"],
            ["daysSinceOnsetOfSymptoms": "2"],
            ["key": 12],
            ["rollingStartNumber": 5_000_000_000],
            ["rollingPeriod": 14.5],
            ["key": nil],
            ["rollingStartNumber": nil],
            ["rollingPeriod": nil],
        ]
        for changes in broken {
            #expect(try Self.survivors(of: Self.key(changes)) == [Self.other], "\(changes)")
        }
        let notAnObject = try #require(Self.parse(try Self.body([Self.otherKey(), 5, "key"])))
        #expect(notAnObject.keys.map(\.keyData) == [Self.other])
    }

    @Test("a payload whose keys are all invalid is nothing to store")
    func allInvalid() throws {
        let keys: [Any] = [
            Self.key(["rollingPeriod": 0]),
            Self.key(["transmissionRiskLevel": 8]),
            Self.key(["key": Data(count: 15).base64EncodedString()]),
            Self.key(["rollingStartNumber": Self.now10 + 1]),
            Self.key(["rollingStartNumber": "soon"]),
        ]
        #expect(Self.parse(try Self.body(keys)) == nil)
    }

    @Test("rows move the risk level 0…7 onto 1…8, a missing onset to 0, and keep the rest")
    func rows() {
        let a: [UInt8] = Array(repeating: 1, count: 16)
        let b: [UInt8] = Array(repeating: 2, count: 16)
        let payload = NHSKeyPayload(
            token: Self.token,
            keys: [
                NHSKeyPayload.NHSKey(
                    keyData: a,
                    rollingStartNumber: 2_666_448,
                    rollingPeriod: 144,
                    transmissionRiskLevel: 0,
                    daysSinceOnsetOfSymptoms: nil
                ),
                NHSKeyPayload.NHSKey(
                    keyData: b,
                    rollingStartNumber: 2_666_592,
                    rollingPeriod: 74,
                    transmissionRiskLevel: 7,
                    daysSinceOnsetOfSymptoms: -3
                ),
            ]
        )
        #expect(
            payload.rows(kit: .labResult) == [
                DiagnosisKeyRow(
                    keyData: a,
                    rollingStartIntervalNumber: 2_666_448,
                    rollingPeriod: 144,
                    transmissionRiskLevel: 1,
                    daysSinceOnsetOfSymptoms: 0,
                    reportType: "CONFIRMED_TEST"
                ),
                DiagnosisKeyRow(
                    keyData: b,
                    rollingStartIntervalNumber: 2_666_592,
                    rollingPeriod: 74,
                    transmissionRiskLevel: 8,
                    daysSinceOnsetOfSymptoms: -3,
                    reportType: "CONFIRMED_TEST"
                ),
            ]
        )
    }

    @Test("each risk level t is stored as t + 1", arguments: 0...7)
    func riskMapping(level: Int) throws {
        let payload = try #require(Self.parse(try Self.body([Self.key(["transmissionRiskLevel": level])])))
        #expect(payload.rows(kit: .labResult).map(\.transmissionRiskLevel) == [Int32(level) + 1])
    }

    @Test("an absent risk level and onset are stored as 8 and 0")
    func absentFieldsStored() throws {
        let key = Self.key(["transmissionRiskLevel": nil, "daysSinceOnsetOfSymptoms": nil])
        let payload = try #require(Self.parse(try Self.body([key])))
        let rows = payload.rows(kit: .rapidResult)
        #expect(rows.map(\.transmissionRiskLevel) == [8])
        #expect(rows.map(\.daysSinceOnsetOfSymptoms) == [0])
    }

    @Test(
        "lab and rapid results are confirmed tests, a self-reported rapid test a self-report",
        arguments: [
            (NHSTestKit.labResult, "CONFIRMED_TEST"), (NHSTestKit.rapidResult, "CONFIRMED_TEST"),
            (NHSTestKit.rapidSelfReported, "SELF_REPORT"),
        ]
    )
    func reportType(kit: NHSTestKit, reportType: String) throws {
        let payload = try #require(Self.parse(try Self.body([Self.key(), Self.otherKey()])))
        #expect(payload.rows(kit: kit).map(\.reportType) == [reportType, reportType])
        #expect(ReportType(storageName: reportType) != nil)
    }

    @Test("the submission type follows the kit")
    func submissionType() {
        #expect(NHSKeyPayload.submissionType(.labResult) == .pcrTest)
        #expect(NHSKeyPayload.submissionType(.rapidResult) == .rapidTest)
        #expect(NHSKeyPayload.submissionType(.rapidSelfReported) == .srsSelfTest)
        #expect(NHSKeyPayload.submissionType(.labResult).storageName == "SUBMISSION_TYPE_PCR_TEST")
    }
}
