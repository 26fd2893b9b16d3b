// The S3 object store against a real S3-protocol server (moto) that each test starts: put, list with continuation,
// checksums, headers, deletes, a missing bucket, and signatures that a verifying server accepts.

import AsyncHTTPClient
import Crypto
import ENCrypto
import ENTestSupport
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Testing

@testable import DistributionService

@Suite("S3 object store", .enabled(if: MotoServer.isAvailable, "moto server (python3 -m moto.server) is not installed"))
struct S3ObjectStoreTests {
    private static let bucket = "cwa"

    private static func configuration(
        _ moto: MotoServer,
        bucket: String = S3ObjectStoreTests.bucket,
        accessKeyID: String = "AKIAIOSFODNN7EXAMPLE",
        secretAccessKey: String = "moto-takes-any-secret",
        publicReadACL: Bool = true
    ) -> S3Configuration {
        S3Configuration(
            endpoint: moto.endpoint + "/",
            bucket: bucket,
            region: "us-east-1",
            accessKeyID: accessKeyID,
            secretAccessKey: secretAccessKey,
            publicReadACL: publicReadACL,
            requestTimeout: .seconds(30)
        )
    }

    /// Runs `body` with a fresh moto server holding an empty bucket `cwa`, and a client; both end afterwards.
    private func withMoto(_ body: (MotoServer, HTTPClient) async throws -> Void) async throws {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        try await withCleanup {
            let moto = try await MotoServer.start()
            try await withCleanup {
                try await moto.createBucket(Self.bucket, client: client)
                try await body(moto, client)
            } cleanup: {
                await moto.stop()
            }
        } cleanup: {
            try await client.shutdown()
        }
    }

    private static func object(
        _ key: String,
        _ text: String,
        _ type: CDNObject.ContentType,
        index: Bool = false
    ) -> CDNObject {
        let body = Array(text.utf8)
        let checksum = Hex.encode(Insecure.MD5.hash(data: Array(Insecure.MD5.hash(data: body))))
        return CDNObject(key: key, body: body, contentType: type, isDirectoryIndex: index, checksum: checksum)
    }

    private let dates = S3ObjectStoreTests.object(
        "version/v1/diagnosis-keys/country/DE/date",
        #"["2020-06-09"]"#,
        .json,
        index: true
    )
    private let day = S3ObjectStoreTests.object(
        "version/v1/diagnosis-keys/country/DE/date/2020-06-09",
        "PK-archive-bytes",
        .zip
    )
    /// A key with characters that need encoding in the path and escaping in the listing's XML.
    private let odd = S3ObjectStoreTests.object("special/a b&c+d$é.json", "{}", .json)

    // MARK: - Tests

    @Test("put objects come back in listings by prefix, with the checksum they were put with")
    func putListAndChecksum() async throws {
        try await self.withMoto { moto, client in
            let store = S3ObjectStore(
                configuration: Self.configuration(moto),
                httpClient: client,
                logger: Logger(label: "test.s3")
            )

            for object in [self.dates, self.day, self.odd] {
                try await store.put(object)
            }

            #expect(try await store.list(prefix: "version/v1/") == [self.dates.key, self.day.key])
            #expect(try await store.list(prefix: "version/v1/diagnosis-keys/country/DE/date/") == [self.day.key])
            #expect(try await store.list(prefix: "special/") == [self.odd.key])
            #expect(try await store.list(prefix: "") == [self.dates.key, self.day.key, self.odd.key])
            #expect(try await store.list(prefix: "nothing/").isEmpty)
            #expect(try await store.checksum(of: self.dates.key) == self.dates.checksum)
            #expect(try await store.checksum(of: self.day.key) == self.day.checksum)
            #expect(try await store.checksum(of: self.odd.key) == self.odd.checksum)
            #expect(try await store.checksum(of: "version/v1/absent") == nil)
            #expect(store.description == "s3 \(moto.endpoint)/cwa")
        }
    }

    @Test("a put replaces the object and its checksum; a delete removes it; deleting an absent key succeeds")
    func replaceAndDelete() async throws {
        try await self.withMoto { moto, client in
            let store = S3ObjectStore(
                configuration: Self.configuration(moto),
                httpClient: client,
                logger: Logger(label: "test.s3")
            )
            try await store.put(self.dates)
            let newer = Self.object(self.dates.key, #"["2020-06-09","2020-06-10"]"#, .json, index: true)

            try await store.put(newer)
            let replaced = try await store.checksum(of: newer.key)
            try await store.delete(newer.key)
            let afterDelete = try await store.checksum(of: newer.key)
            try await store.delete(newer.key)
            try await store.delete("never/put")

            #expect(replaced == newer.checksum)
            #expect(replaced != self.dates.checksum)
            #expect(afterDelete == nil)
            #expect(try await store.list(prefix: "").isEmpty)
        }
    }

    @Test("objects carry their content type, Cache-Control, cwa-hash, body and (if configured) a public-read ACL")
    func storedHeaders() async throws {
        try await self.withMoto { moto, client in
            let store = S3ObjectStore(
                configuration: Self.configuration(moto),
                httpClient: client,
                logger: Logger(label: "test.s3")
            )
            let privateStore = S3ObjectStore(
                configuration: Self.configuration(moto, publicReadACL: false),
                httpClient: client,
                logger: Logger(label: "test.s3")
            )
            let hidden = Self.object("version/v1/hidden", "[]", .json)
            try await store.put(self.dates)
            try await store.put(self.day)
            try await privateStore.put(hidden)
            let signer = SigV4Signer(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "any", region: "us-east-1")

            for object in [self.dates, self.day] {
                let address = "\(moto.endpoint)/cwa/\(object.key)"
                let reply = try await MotoServer.send(
                    try MotoServer.signedRequest(.GET, address, signer: signer),
                    on: client
                )
                let acl = try await MotoServer.send(
                    try MotoServer.signedRequest(.GET, address + "?acl", signer: signer),
                    on: client
                )

                #expect(reply.status == 200)
                #expect(reply.body == String(decoding: object.body, as: UTF8.self))
                #expect(reply.headers.first(name: "Content-Type") == object.contentType.rawValue)
                #expect(reply.headers.first(name: "Cache-Control") == "public,max-age=300")
                #expect(reply.headers.first(name: "x-amz-meta-cwa-hash") == object.checksum)
                #expect(acl.body.contains("http://acs.amazonaws.com/groups/global/AllUsers"))
            }
            let hiddenACL = try await MotoServer.send(
                try MotoServer.signedRequest(.GET, "\(moto.endpoint)/cwa/\(hidden.key)?acl", signer: signer),
                on: client
            )
            #expect(hiddenACL.status == 200)
            #expect(!hiddenACL.body.contains("AllUsers"))
        }
    }

    @Test("listings follow continuation tokens across pages; an empty object is stored too")
    func pagination() async throws {
        try await self.withMoto { moto, client in
            let store = S3ObjectStore(
                configuration: Self.configuration(moto),
                httpClient: client,
                logger: Logger(label: "test.s3"),
                pageSize: 2
            )
            let hours = (0..<5).map { Self.object("version/v1/twp/country/DE/hour/\(450_000 + $0)", "", .zip) }
            for object in hours + [self.dates] {
                try await store.put(object)
            }

            let listed = try await store.list(prefix: "version/v1/twp/country/DE/hour/")

            #expect(listed == Set(hours.map(\.key)))
            #expect(try await store.list(prefix: "") == Set(hours.map(\.key) + [self.dates.key]))
            #expect(try await store.checksum(of: hours[0].key) == hours[0].checksum)
        }
    }

    @Test("a missing bucket is reported as such by checkBucket, put, list and delete")
    func missingBucket() async throws {
        try await self.withMoto { moto, client in
            let store = S3ObjectStore(
                configuration: Self.configuration(moto),
                httpClient: client,
                logger: Logger(label: "test.s3")
            )
            let missing = S3ObjectStore(
                configuration: Self.configuration(moto, bucket: "absent"),
                httpClient: client,
                logger: Logger(label: "test.s3")
            )

            try await store.checkBucket()
            await #expect(throws: S3Error.bucketMissing("absent")) { try await missing.checkBucket() }
            await #expect(throws: S3Error.bucketMissing("absent")) { try await missing.put(self.dates) }
            await #expect(throws: S3Error.bucketMissing("absent")) { try await missing.list(prefix: "version/") }
            await #expect(throws: S3Error.bucketMissing("absent")) { try await missing.delete(self.dates.key) }
            #expect("\(S3Error.bucketMissing("absent"))".contains("'absent' does not exist"))
        }
    }

    @Test("a server that verifies signatures accepts every operation, and refuses a wrong secret without showing it")
    func verifiedSignatures() async throws {
        try await self.withMoto { moto, client in
            let keys = try await moto.requireSignatures(client: client)
            let configuration = Self.configuration(
                moto,
                accessKeyID: keys.accessKeyID,
                secretAccessKey: keys.secretAccessKey
            )
            let store = S3ObjectStore(
                configuration: configuration,
                httpClient: client,
                logger: Logger(label: "test.s3"),
                pageSize: 1
            )
            var wrong = configuration
            wrong.secretAccessKey = "not-the-secret"
            let impostor = S3ObjectStore(configuration: wrong, httpClient: client, logger: Logger(label: "test.s3"))

            try await store.checkBucket()
            try await store.put(self.dates)
            try await store.put(self.day)
            // moto compares against a canonical form it builds from the decoded URL, so only prefixes without
            // characters that need encoding are verified here; the AWS examples in SigV4Tests cover the encoding.
            let listed = try await store.list(prefix: "version")
            let checksum = try await store.checksum(of: self.day.key)
            try await store.delete(self.day.key)
            let afterDelete = try await store.checksum(of: self.day.key)
            let refusal = await #expect(throws: S3Error.self) { try await impostor.put(self.day) }

            #expect(listed == [self.dates.key, self.day.key])
            #expect(checksum == self.day.checksum)
            #expect(afterDelete == nil)
            #expect(
                refusal
                    == S3Error.unexpectedStatus(
                        operation: "put",
                        key: self.day.key,
                        status: 403,
                        code: "SignatureDoesNotMatch"
                    )
            )
            #expect(!String(describing: refusal).contains("not-the-secret"))
            #expect(!"\(configuration)".contains(keys.secretAccessKey))
        }
    }
}
