// Every lab field rejected with its status, and nothing stored when a batch is refused.

import ENCrypto
import ENModels
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import TestResultService

@Suite("Lab upload validation")
struct LabUploadValidationTests {
    static let clock = ManualClock(Date(timeIntervalSince1970: 1_700_000_000))
    static let id = TestIDs.hashedGUID("validation")

    /// A batch that must be refused, the route it goes to, and a fragment of the expected message.
    struct Rejection: Sendable, CustomTestStringConvertible {
        let name: String
        let path: String
        let body: String
        let message: String
        var testDescription: String { self.name }
    }

    static let rejections: [Rejection] = {
        let id = Self.id
        func pcr(_ name: String, _ body: String, _ message: String) -> Rejection {
            Rejection(name: name, path: "/api/v1/lab/results", body: body, message: message)
        }
        return [
            pcr("body is not JSON", "{not json", "body is not valid JSON"),
            pcr("body is an array", "[]", "body: expected an object"),
            pcr("body is empty", "", "body is not valid JSON"),
            pcr("testResults missing", #"{"labId":"l"}"#, "testResults is required"),
            pcr("testResults empty", #"{"testResults":[]}"#, "testResults must not be empty"),
            pcr("testResults not an array", #"{"testResults":{"id":"\#(id)"}}"#, "testResults: expected an array"),
            pcr("entry not an object", #"{"testResults":["\#(id)"]}"#, "testResults[0]: expected an object"),
            pcr("id missing", #"{"testResults":[{"result":2}]}"#, "testResults[0].id is required"),
            pcr("id null", #"{"testResults":[{"id":null,"result":2}]}"#, "testResults[0].id is required"),
            pcr("id a number", #"{"testResults":[{"id":12,"result":2}]}"#, "testResults[0].id: expected a string"),
            pcr(
                "id 63 characters",
                #"{"testResults":[{"id":"\#(id.dropLast())","result":2}]}"#,
                "testResults[0].id must be 64 hex"
            ),
            pcr(
                "id 65 characters",
                #"{"testResults":[{"id":"\#(id)a","result":2}]}"#,
                "testResults[0].id must be 64 hex"
            ),
            pcr(
                "id not hex",
                #"{"testResults":[{"id":"\#(id.dropLast())g","result":2}]}"#,
                "testResults[0].id must be 64 hex"
            ),
            pcr(
                "id with x after the first character",
                #"{"testResults":[{"id":"a\#(id.dropFirst(2))x","result":2}]}"#,
                "must be 64 hex"
            ),
            pcr("id with spaces", #"{"testResults":[{"id":" \#(id.dropFirst())","result":2}]}"#, "must be 64 hex"),
            pcr("result missing", #"{"testResults":[{"id":"\#(id)"}]}"#, "testResults[0].result is required"),
            pcr(
                "result a string",
                #"{"testResults":[{"id":"\#(id)","result":"2"}]}"#,
                "testResults[0].result: expected an integer"
            ),
            pcr("result a fraction", #"{"testResults":[{"id":"\#(id)","result":2.5}]}"#, "a number is not an integer"),
            pcr(
                "sc beyond 64 bits",
                #"{"testResults":[{"id":"\#(id)","result":2,"sc":99999999999999999999}]}"#,
                "a number is not an integer"
            ),
            pcr(
                "result a boolean",
                #"{"testResults":[{"id":"\#(id)","result":true}]}"#,
                "testResults[0].result: expected an integer"
            ),
            pcr(
                "PCR result 0 (pending is a server state)",
                #"{"testResults":[{"id":"\#(id)","result":0}]}"#,
                "between 1 and 3"
            ),
            pcr(
                "PCR result 4 (redeemed is a server state)",
                #"{"testResults":[{"id":"\#(id)","result":4}]}"#,
                "between 1 and 3"
            ),
            pcr(
                "PCR result 7 (a rapid-test code)",
                #"{"testResults":[{"id":"\#(id)","result":7}]}"#,
                "between 1 and 3"
            ),
            pcr("PCR result negative", #"{"testResults":[{"id":"\#(id)","result":-1}]}"#, "between 1 and 3"),
            pcr(
                "sc a string",
                #"{"testResults":[{"id":"\#(id)","result":2,"sc":"1699990000"}]}"#,
                "testResults[0].sc: expected an integer"
            ),
            pcr(
                "sc negative",
                #"{"testResults":[{"id":"\#(id)","result":2,"sc":-5}]}"#,
                "testResults[0].sc must be Unix epoch seconds"
            ),
            pcr(
                "sc before 2020",
                #"{"testResults":[{"id":"\#(id)","result":2,"sc":1500000000}]}"#,
                "sc must be Unix epoch seconds"
            ),
            pcr(
                "sc more than an hour ahead",
                #"{"testResults":[{"id":"\#(id)","result":2,"sc":1700003601}]}"#,
                "sc must be Unix epoch seconds"
            ),
            pcr(
                "sc in milliseconds",
                #"{"testResults":[{"id":"\#(id)","result":2,"sc":1699990000000}]}"#,
                "sc must be Unix epoch seconds"
            ),
            pcr("labId empty", #"{"labId":"","testResults":[{"id":"\#(id)","result":2}]}"#, "labId must be 1 to 64"),
            pcr(
                "labId 65 characters",
                #"{"labId":"\#(String(repeating: "l", count: 65))","testResults":[{"id":"\#(id)","result":2}]}"#,
                "labId must be 1 to 64"
            ),
            pcr(
                "labId a number",
                #"{"labId":7,"testResults":[{"id":"\#(id)","result":2}]}"#,
                "labId: expected a string"
            ),
            pcr(
                "labId with a control character",
                #"{"labId":"lab\u0007","testResults":[{"id":"\#(id)","result":2}]}"#,
                "labId must be 1 to 64"
            ),
            pcr(
                "labId with a C1 control character",
                #"{"labId":"lab\u0085","testResults":[{"id":"\#(id)","result":2}]}"#,
                "labId must be 1 to 64"
            ),
            pcr(
                "labId with a bidi override",
                #"{"labId":"lab\u202e","testResults":[{"id":"\#(id)","result":2}]}"#,
                "labId must be 1 to 64"
            ),
            pcr(
                "labId of 33 characters but 66 code points",
                #"{"labId":"\#(String(repeating: "e\u{301}", count: 33))","testResults":[{"id":"\#(id)","result":2}]}"#,
                "labId must be 1 to 64"
            ),
            pcr(
                "one bad entry among good ones",
                #"{"testResults":[{"id":"\#(id)","result":2},{"id":"\#(id.uppercased())","result":9}]}"#,
                "testResults[1].result must be between 1 and 3"
            ),
            Rejection(
                name: "rapid result 4",
                path: "/api/v1/quicktest/results",
                body: #"{"testResults":[{"id":"\#(id)","result":4}]}"#,
                message: "between 5 and 9"
            ),
            Rejection(
                name: "rapid result 10",
                path: "/api/v1/quicktest/results",
                body: #"{"testResults":[{"id":"\#(id)","result":10}]}"#,
                message: "between 5 and 9"
            ),
            Rejection(
                name: "PoC-NAT result 9",
                path: "/api/v1/pocnat/results",
                body: #"{"testResults":[{"id":"\#(id)","result":9}]}"#,
                message: "between 10 and 14"
            ),
            Rejection(
                name: "PoC-NAT result 15",
                path: "/api/v1/pocnat/results",
                body: #"{"testResults":[{"id":"\#(id)","result":15}]}"#,
                message: "between 10 and 14"
            ),
            Rejection(
                name: "rapid lookup without id",
                path: "/api/v1/quicktest/result",
                body: #"{"sc":1}"#,
                message: "id is required"
            ),
            Rejection(
                name: "PoC-NAT lookup with a bad id",
                path: "/api/v1/pocnat/result",
                body: #"{"id":"abc"}"#,
                message: "id must be 64 hex"
            ),
        ]
    }()

    @Test(
        "an invalid batch is refused with 400 and a message naming the field; nothing is stored",
        arguments: Self.rejections
    )
    func rejectsInvalidField(_ rejection: Rejection) async throws {
        let (reply, stored) = try await self.upload(ByteBuffer(string: rejection.body), to: rejection.path)

        #expect(reply.status == .badRequest)
        #expect(reply.headers[.contentType] == "application/json; charset=utf-8")
        let error = try JSONDecoder().decode([String: String].self, from: reply.body.data)
        #expect(error["error"]?.contains(rejection.message) == true, "got \(error)")
        #expect(stored == 0)
    }

    @Test("valid variants are accepted: x-prefixed DOB hash, upper case, no sc, no labId")
    func acceptsValidVariants() async throws {
        let dobHash = "x" + Self.id.dropFirst()
        let body = TestResultFixture.batch(
            labID: nil,
            [
                (dobHash, 1, nil), (Self.id.uppercased().replacingOccurrences(of: "A", with: "a"), 2, 1_699_990_000),
                (TestIDs.hashedGUID(), 3, 1_700_003_600),
            ]
        )

        let (reply, stored) = try await self.upload(body)

        #expect(reply.status == .noContent)
        #expect(reply.body.readableBytes == 0)
        #expect(stored == 3)
    }

    @Test("more results than LAB_MAX_RESULTS_PER_UPLOAD are refused")
    func rejectsTooManyResults() async throws {
        let entries = (0..<4).map { (TestIDs.hashedGUID("\($0)"), 2, Int64?.none) }

        let (reply, stored) = try await self.upload(
            TestResultFixture.batch(entries),
            settings: ["LAB_MAX_RESULTS_PER_UPLOAD": "3"]
        )

        #expect(reply.status == .badRequest)
        #expect(reply.text.contains("more than 3 entries"))
        #expect(stored == 0)
    }

    @Test(
        "a body that is not JSON by its Content-Type gets 415",
        arguments: [nil, "text/plain", "application/x-www-form-urlencoded", "application/jsonx"]
    )
    func rejectsWrongContentType(_ contentType: String?) async throws {
        let headers: HTTPFields = contentType.map { [.contentType: $0] } ?? [:]

        let (reply, stored) = try await self.upload(TestResultFixture.batch([(Self.id, 2, nil)]), headers: headers)

        #expect(reply.status == .unsupportedMediaType)
        #expect(stored == 0)
    }

    @Test("a body over HTTP_MAX_BODY_SIZE gets 413 and closes the connection; nothing is stored")
    func rejectsOversizedBody() async throws {
        let entries = (0..<20).map { (TestIDs.hashedGUID("\($0)"), 2, Int64?.none) }
        let body = TestResultFixture.batch(entries)
        #expect(body.readableBytes > 1024)

        let (reply, stored) = try await self.upload(body, settings: ["HTTP_MAX_BODY_SIZE": "1024"])

        #expect(reply.status == .contentTooLarge)
        #expect(reply.headers[.connection] == "close")
        #expect(reply.text.contains("larger than 1024 bytes"))
        #expect(stored == 0)
    }

    @Test("a later entry for the same id in one batch replaces the earlier one")
    func laterDuplicateWins() throws {
        let validator = LabUploadValidator(maxResults: 10)
        let other = TestIDs.hashedGUID("other")
        let batch = LabResultBatch(
            labId: "lab",
            testResults: [
                LabResultEntry(id: Self.id, result: 1, sc: nil, dobProtected: nil),
                LabResultEntry(id: other, result: 3, sc: nil, dobProtected: nil),
                LabResultEntry(id: Self.id.uppercased(), result: 2, sc: nil, dobProtected: nil),
            ]
        )

        let uploads = try validator.validate(batch, kind: .pcr, now: Self.clock.now)

        #expect(uploads.map(\.key) == [Self.id, other])
        #expect(uploads.map(\.result.code) == [2, 3])
    }

    @Test("storage keys: PCR ids lowercased; rapid and PoC-NAT ids hashed as sent, for uploads and lookups alike")
    func storageKeys() throws {
        let id = try #require(TestID("X" + Self.id.dropFirst().uppercased()))

        #expect(id.storageKey(for: .pcr) == "x" + Self.id.dropFirst())
        #expect(id.storageKey(for: .rapidAntigen) == SecretHash.sha256Hex(id.raw))
        #expect(id.storageKey(for: .pointOfCareNAT) == id.storageKey(for: .rapidAntigen))
        #expect(id.storageKey(for: .rapidAntigen) != SecretHash.sha256Hex(id.raw.lowercased()))
    }

    /// Posts `body` to `path` of a lab router configured with `overrides` over an empty in-memory repository;
    /// returns the reply and how many results the repository holds afterwards.
    private func upload(
        _ body: ByteBuffer,
        to path: String = "/api/v1/lab/results",
        headers: HTTPFields = .json,
        settings overrides: [String: String] = [:]
    ) async throws -> (reply: RouterReply, stored: Int) {
        let repository = InMemoryTestResultRepository()
        let app = try TestResultFixture.labApp(
            configuration: try TestResultFixture.configuration(overrides),
            dependencies: self.dependencies(repository)
        )
        let reply = try await app.post(path, headers: headers, body: body)
        return (reply, await repository.count)
    }

    /// In-memory dependencies on the suite's clock, with `repository`.
    private func dependencies(_ repository: InMemoryTestResultRepository) -> TestResultDependencies {
        var dependencies = TestResultDependencies.inMemory(clock: Self.clock.wallClock)
        dependencies.repository = repository
        return dependencies
    }
}
