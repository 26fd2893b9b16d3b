// Update rules, pending-on-first-lookup and concurrency against a real PostgreSQL database.

import ENCrypto
import ENModels
import ENServiceKit
import ENTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Testing

@testable import TestResultService

@Suite("Result storage (PostgreSQL)", .postgres(TestResultMigrations.group))
struct ResultStorageTests {
    let clock = ManualClock(Date(timeIntervalSince1970: 1_700_000_000))

    @Test("a lab upload is read back by verification with its sc and labId")
    func uploadThenLookup() async throws {
        let (lab, internalAPI, _) = try self.apps()
        let id = TestIDs.hashedGUID()

        try await lab.test(.router) { client in
            let response = try await client.execute(
                uri: "/api/v1/lab/results",
                method: .post,
                headers: .json,
                body: TestResultFixture.batch(labID: "lab-7", [(id.uppercased(), 2, 1_699_990_000)])
            )
            #expect(response.status == .noContent)
        }
        let result = try await self.verificationLookup(internalAPI, id)

        #expect(
            result == VerificationResultResponse(testResult: 2, sc: 1_699_990_000, labId: "lab-7", dobProtected: nil)
        )
    }

    @Test("an unknown id read by verification creates a pending PCR row dated now")
    func pendingOnFirstLookup() async throws {
        let (_, internalAPI, _) = try self.apps()
        let id = TestIDs.hashedGUID()

        let first = try await self.verificationLookup(internalAPI, id)
        let rows = try await self.rows()

        #expect(first == VerificationResultResponse(testResult: 0, sc: 1_700_000_000, labId: nil, dobProtected: nil))
        #expect(rows.count == 1)
        #expect(rows.first?.key == id)
        #expect(rows.first?.code == 0)
    }

    @Test("a lab may correct a result; the correction replaces result, sc and labId")
    func labCorrectsResult() async throws {
        let (lab, internalAPI, _) = try self.apps()
        let id = TestIDs.hashedGUID()

        try await self.upload(
            lab,
            "/api/v1/lab/results",
            TestResultFixture.batch(labID: "lab-1", [(id, 2, 1_699_900_000)])
        )
        try await self.upload(
            lab,
            "/api/v1/lab/results",
            TestResultFixture.batch(labID: "lab-2", [(id, 1, 1_699_950_000)])
        )

        #expect(
            try await self.verificationLookup(internalAPI, id)
                == VerificationResultResponse(testResult: 1, sc: 1_699_950_000, labId: "lab-2", dobProtected: nil)
        )
        #expect(try await self.rows().count == 1)
    }

    @Test("a pending upload never replaces a lab's verdict: a rapid test's positive stays when pending comes after it")
    func pendingNeverOverFinal() async throws {
        let (lab, _, _) = try self.apps()
        let id = TestIDs.hashedGUID()

        try await self.upload(lab, "/api/v1/quicktest/results", TestResultFixture.batch([(id, 7, nil)]))
        try await self.upload(lab, "/api/v1/quicktest/results", TestResultFixture.batch([(id, 5, nil)]))

        #expect(try await self.rows().first?.code == 7)
    }

    @Test("dobProtected reaches verification, and stays when a later upload of the result leaves it out")
    func dobProtectionSticks() async throws {
        let (lab, internalAPI, _) = try self.apps()
        let (id, plain) = (TestIDs.hashedGUID(), TestIDs.hashedGUID())
        let protected = ByteBuffer(
            string: #"{"testResults":[{"id":"\#(id)","result":2,"dobProtected":true},{"id":"\#(plain)","result":2}]}"#
        )

        try await self.upload(lab, "/api/v1/lab/results", protected)
        try await self.upload(lab, "/api/v1/lab/results", TestResultFixture.batch(labID: nil, [(id, 1, nil)]))

        #expect(try await self.verificationLookup(internalAPI, id).dobProtected == true)
        #expect(try await self.verificationLookup(internalAPI, id).testResult == 1)
        #expect(try await self.verificationLookup(internalAPI, plain).dobProtected == nil)
    }

    @Test("a pending row created by a lookup is filled by the later upload")
    func uploadFillsPendingRow() async throws {
        let (lab, internalAPI, _) = try self.apps()
        let id = TestIDs.hashedGUID()

        _ = try await self.verificationLookup(internalAPI, id)
        try await self.upload(lab, "/api/v1/lab/results", TestResultFixture.batch([(id, 2, nil)]))

        #expect(try await self.verificationLookup(internalAPI, id).testResult == 2)
    }

    @Test(
        "a redeemed row never changes, whatever a lab sends",
        arguments: [
            (redeemed: 4, path: "/api/v1/lab/results", upload: 1),
            (redeemed: 9, path: "/api/v1/quicktest/results", upload: 6),
            (redeemed: 14, path: "/api/v1/pocnat/results", upload: 11),
        ]
    )
    func redeemedRowNeverChanges(_ redeemed: Int, _ path: String, _ upload: Int) async throws {
        let (lab, _, database) = try self.apps()
        let id = TestIDs.hashedGUID()
        let key = path.contains("/lab/") ? id : SecretHash.sha256Hex(id)
        try await database.client.query(
            """
            INSERT INTO test_result (result_id, result, result_date, lab_id, created_at, updated_at)
            VALUES (\(key), \(Int16(redeemed)), '2023-11-01T00:00:00Z', 'lab-1', now(), now())
            """
        )

        try await self.upload(lab, path, TestResultFixture.batch(labID: "lab-2", [(id, upload, 1_699_950_000)]))

        let rows = try await self.rows()
        #expect(rows.map(\.code) == [redeemed])
        #expect(rows.map(\.labID) == ["lab-1"])
    }

    @Test("20 parallel batches over HTTP with the same 50 ids in different orders: all 204, one row per id")
    func parallelOverlappingBatches() async throws {
        let (lab, _, _) = try self.apps()
        let ids = (0..<50).map { TestIDs.hashedGUID("overlap-\($0)") }

        let statuses = try await lab.test(.router) { client in
            try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for batch in 0..<20 {
                    var generator = SeededGenerator(seed: UInt64(batch + 1))
                    let order = ids.shuffled(using: &generator)
                    group.addTask {
                        let body = TestResultFixture.batch(
                            labID: "lab-\(batch)",
                            order.map { ($0, 1 + batch % 3, nil) }
                        )
                        return try await client.execute(
                            uri: "/api/v1/lab/results",
                            method: .post,
                            headers: .json,
                            body: body
                        ).status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        let rows = try await self.rows()

        #expect(statuses.count == 20)
        #expect(statuses.allSatisfy { $0 == .noContent })
        #expect(Set(rows.map(\.key)) == Set(ids))
        #expect(rows.count == 50)
        // Each row is one batch's: its lab and its result agree.
        #expect(
            rows.allSatisfy { row in row.labID.flatMap { Int($0.dropFirst(4)) }.map { 1 + $0 % 3 == row.code } ?? false
            }
        )
    }

    @Test(
        "malformed JSON, wrong types and oversized bodies store nothing in PostgreSQL",
        arguments: [
            "{\"testResults\":[{\"id\":", "{\"testResults\":[{\"id\":\"abc\",\"result\":2}]}",
            "{\"testResults\":\"many\"}",
            "{\"testResults\":["
                + String(
                    repeating: "{\"id\":\"" + String(repeating: "a", count: 64) + "\",\"result\":2},",
                    count: 13_000
                ) + "{}]}",
        ]
    )
    func badBodiesStoreNothing(_ body: String) async throws {
        let (lab, _, _) = try self.apps()

        try await lab.test(.router) { client in
            let response = try await client.execute(
                uri: "/api/v1/lab/results",
                method: .post,
                headers: .json,
                body: ByteBuffer(string: body)
            )
            #expect([.badRequest, .contentTooLarge].contains(response.status))
        }
        #expect(try await self.rows().isEmpty)
    }

    @Test("a rapid-test portal reads back what it uploaded; the app finds it under SHA-256 of the portal's id")
    func rapidTestSameKeyForUploadAndLookup() async throws {
        let (lab, internalAPI, _) = try self.apps()
        let portalID = TestIDs.hashedGUID()

        let before = try await self.portalLookup(lab, "/api/v1/quicktest/result", portalID)
        try await self.upload(
            lab,
            "/api/v1/quicktest/results",
            TestResultFixture.batch(labID: "rat-1", [(portalID, 7, nil)])
        )
        let after = try await self.portalLookup(lab, "/api/v1/quicktest/result", portalID)
        let app = try await self.verificationLookup(internalAPI, SecretHash.sha256Hex(portalID))

        #expect(before == PortalResultResponse(testResult: 5, labId: nil))
        #expect(after == PortalResultResponse(testResult: 7, labId: "rat-1"))
        #expect(app.testResult == 7)
        #expect(try await self.rows().map(\.key) == [SecretHash.sha256Hex(portalID)])
    }

    @Test("PoC-NAT results: the portal sees 10–14, verification sees them as PCR codes 0–4")
    func pointOfCareCodesConvertedForVerification() async throws {
        let (lab, internalAPI, _) = try self.apps()
        let portalID = TestIDs.hashedGUID()

        try await self.upload(lab, "/api/v1/pocnat/results", TestResultFixture.batch([(portalID, 12, nil)]))

        #expect(try await self.portalLookup(lab, "/api/v1/pocnat/result", portalID).testResult == 12)
        #expect(try await self.verificationLookup(internalAPI, SecretHash.sha256Hex(portalID)).testResult == 2)
    }

    @Test("an invalid batch stores nothing, even when its first entries are valid")
    func invalidBatchStoresNothing() async throws {
        let (lab, _, _) = try self.apps()
        let body = ByteBuffer(
            string: #"{"testResults":[{"id":"\#(TestIDs.hashedGUID())","result":2},{"id":"nope","result":2}]}"#
        )

        try await lab.test(.router) { client in
            let response = try await client.execute(
                uri: "/api/v1/lab/results",
                method: .post,
                headers: .json,
                body: body
            )
            #expect(response.status == .badRequest)
        }
        #expect(try await self.rows().isEmpty)
    }

    @Test("50 parallel uploads of one id leave exactly one row, equal to one of the uploads")
    func parallelUploadsOfOneID() async throws {
        let database = try PostgresTestDatabase.require()
        let repository = PostgresTestResultRepository(client: database.client, logger: database.logger)
        let id = TestIDs.hashedGUID()
        let uploads = (0..<50).map { index in
            ResultUpload(
                key: id,
                result: LabTestResult(code: 1 + index % 3)!,
                sampleCollectedAt: Date(timeIntervalSince1970: TimeInterval(1_699_000_000 + index)),
                labID: "lab-\(index)"
            )
        }

        let outcomes = try await withThrowingTaskGroup(of: StoreOutcome.self) { group in
            for upload in uploads {
                group.addTask { try await repository.store([upload], now: self.clock.now) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let rows = try await self.rows()

        #expect(outcomes.map(\.inserted).reduce(0, +) == 1)
        #expect(outcomes.map(\.updated).reduce(0, +) == 49)
        #expect(rows.count == 1)
        let row = try #require(rows.first)
        let source = try #require(uploads.first { $0.labID == row.labID })
        #expect(row.code == source.result.code)
        #expect(row.sampleCollectedAt == source.sampleCollectedAt)
    }

    @Test("50 parallel first lookups of one id create one pending row and all read pending")
    func parallelFirstLookups() async throws {
        let database = try PostgresTestDatabase.require()
        let repository = PostgresTestResultRepository(client: database.client, logger: database.logger)
        let key = TestIDs.hashedGUID()

        let results = try await withThrowingTaskGroup(of: StoredResult.self) { group in
            for _ in 0..<50 {
                group.addTask { try await repository.findOrCreatePending(key: key, kind: .pcr, now: self.clock.now) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        #expect(results.count == 50)
        #expect(results.allSatisfy { $0.result == .pending(.pcr) })
        #expect(try await self.rows().count == 1)
    }

    // MARK: - Helpers

    private func apps() throws -> (
        lab: some ApplicationProtocol, internalAPI: some ApplicationProtocol, database: PostgresTestDatabase
    ) {
        let database = try PostgresTestDatabase.require()
        let dependencies = TestResultDependencies.postgres(
            client: database.client,
            logger: database.logger,
            clock: self.clock.wallClock
        )
        return (
            try TestResultFixture.labApp(dependencies: dependencies),
            try TestResultFixture.internalApp(dependencies: dependencies), database
        )
    }

    private func upload(_ app: some ApplicationProtocol, _ path: String, _ body: ByteBuffer) async throws {
        try await app.test(.router) { client in
            let response = try await client.execute(uri: path, method: .post, headers: .json, body: body)
            #expect(response.status == .noContent, "\(response.body.text)")
        }
    }

    private func verificationLookup(
        _ app: some ApplicationProtocol,
        _ id: String
    ) async throws -> VerificationResultResponse {
        try await app.test(.router) { client in
            let response = try await client.execute(
                uri: "/api/v1/app/result",
                method: .post,
                headers: HTTPFields.json + TestServiceKeys.header("verification-service", for: "test-result-service"),
                body: TestResultFixture.lookup(id)
            )
            try #require(response.status == .ok, "\(response.body.text)")
            return try JSONDecoder().decode(VerificationResultResponse.self, from: response.body.data)
        }
    }

    private func portalLookup(
        _ app: some ApplicationProtocol,
        _ path: String,
        _ id: String
    ) async throws -> PortalResultResponse {
        try await app.test(.router) { client in
            let response = try await client.execute(
                uri: path,
                method: .post,
                headers: .json,
                body: TestResultFixture.lookup(id)
            )
            try #require(response.status == .ok, "\(response.body.text)")
            return try JSONDecoder().decode(PortalResultResponse.self, from: response.body.data)
        }
    }

    struct Row: Equatable {
        let key: String
        let code: Int
        let sampleCollectedAt: Date
        let labID: String?
    }

    private func rows() async throws -> [Row] {
        let database = try PostgresTestDatabase.require()
        let rows = try await database.client.query(
            "SELECT result_id, result, result_date, lab_id FROM test_result ORDER BY id"
        )
        var result: [Row] = []
        for try await (key, code, date, labID) in rows.decode((String, Int16, Date, String?).self) {
            result.append(Row(key: key, code: Int(code), sampleCollectedAt: date, labID: labID))
        }
        return result
    }
}
