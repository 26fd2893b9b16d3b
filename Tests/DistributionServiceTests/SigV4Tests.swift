// The SigV4 signer against the S3 examples AWS publishes ("Signature Calculations for the Authorization Header:
// Transferring Payload in a Single Chunk"), and the encoding rules behind them.

import Crypto
import ENCrypto
import Foundation
import Testing

@testable import DistributionService

@Suite("SigV4 signer")
struct SigV4Tests {
    /// The example credentials of the AWS documentation (not real ones).
    private let signer = SigV4Signer(
        accessKeyID: "AKIAIOSFODNN7EXAMPLE",
        secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        region: "us-east-1"
    )
    /// 2013-05-24T00:00:00Z, the examples' date.
    private let date = Date(timeIntervalSince1970: 1_369_353_600)
    private let empty = SigV4Signer.emptyPayloadSHA256

    private func header(_ name: String, _ headers: [(String, String)]) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    private func signature(_ headers: [(String, String)]) -> String? {
        self.header("Authorization", headers)?.components(separatedBy: "Signature=").last
    }

    // MARK: - The published examples

    @Test("GET Object: canonical request, string to sign, signature and Authorization as published")
    func getObject() throws {
        let url = try #require(URL(string: "https://examplebucket.s3.amazonaws.com/test.txt"))

        let canonical = self.signer.canonicalRequest(
            method: "GET",
            url: url,
            headers: [("Range", "bytes=0-9")],
            payloadSHA256: self.empty,
            timestamp: "20130524T000000Z"
        )
        let stringToSign = self.signer.stringToSign(canonicalRequest: canonical.text, timestamp: "20130524T000000Z")
        let headers = self.signer.sign(
            method: "GET",
            url: url,
            headers: [("Range", "bytes=0-9")],
            payloadSHA256: self.empty,
            date: self.date
        )

        #expect(
            canonical.text == """
                GET
                /test.txt

                host:examplebucket.s3.amazonaws.com
                range:bytes=0-9
                x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                x-amz-date:20130524T000000Z

                host;range;x-amz-content-sha256;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """
        )
        #expect(
            stringToSign == """
                AWS4-HMAC-SHA256
                20130524T000000Z
                20130524/us-east-1/s3/aws4_request
                7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972
                """
        )
        #expect(
            self.header("Authorization", headers)
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        )
        #expect(self.header("x-amz-date", headers) == "20130524T000000Z")
        #expect(self.header("x-amz-content-sha256", headers) == self.empty)
    }

    @Test("PUT Object: a key that needs encoding ($ → %24), a signed body hash and extra headers")
    func putObject() throws {
        let body = Array("Welcome to Amazon S3.".utf8)
        let payload = Hex.encode(SHA256.hash(data: body))
        let headers: [(String, String)] = [
            ("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        ]

        // The same key, written raw and percent-encoded: both sign the canonical `/test%24file.text`.
        let host = "https://examplebucket.s3.amazonaws.com"
        for address in ["\(host)/test$file.text", "\(host)/test%24file.text"] {
            let url = try #require(URL(string: address))
            let signed = self.signer.sign(
                method: "PUT",
                url: url,
                headers: headers,
                payloadSHA256: payload,
                date: self.date
            )

            #expect(SigV4Signer.canonicalURI(of: url) == "/test%24file.text")
            #expect(
                self.header("Authorization", signed)
                    == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
                    + "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
                    + "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
            )
        }
        #expect(payload == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
    }

    @Test("GET Bucket Lifecycle: a bare query parameter is signed as `lifecycle=`")
    func getBucketLifecycle() throws {
        let url = try #require(URL(string: "https://examplebucket.s3.amazonaws.com/?lifecycle"))

        let signed = self.signer.sign(method: "GET", url: url, headers: [], payloadSHA256: self.empty, date: self.date)

        #expect(SigV4Signer.canonicalQuery(of: url) == "lifecycle=")
        #expect(self.signature(signed) == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
    }

    @Test("GET Bucket (List Objects): query parameters are sorted, in whatever order they are sent")
    func listObjects() throws {
        let host = "https://examplebucket.s3.amazonaws.com"
        for address in ["\(host)/?max-keys=2&prefix=J", "\(host)/?prefix=J&max-keys=2"] {
            let url = try #require(URL(string: address))

            let signed = self.signer.sign(
                method: "GET",
                url: url,
                headers: [],
                payloadSHA256: self.empty,
                date: self.date
            )

            #expect(SigV4Signer.canonicalQuery(of: url) == "max-keys=2&prefix=J")
            #expect(self.signature(signed) == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
        }
    }

    // MARK: - Rules

    @Test("URI encoding keeps only the unreserved characters, and `/` in paths")
    func uriEncoding() {
        #expect(SigV4Signer.uriEncode("AZaz09-_.~", keepSlash: false) == "AZaz09-_.~")
        #expect(SigV4Signer.uriEncode("a b+c=d&e$f", keepSlash: false) == "a%20b%2Bc%3Dd%26e%24f")
        #expect(SigV4Signer.uriEncode("version/v1/a b", keepSlash: true) == "version/v1/a%20b")
        #expect(SigV4Signer.uriEncode("version/v1/", keepSlash: false) == "version%2Fv1%2F")
        #expect(SigV4Signer.uriEncode("é%", keepSlash: false) == "%C3%A9%25")
    }

    @Test("the canonical query encodes names and values once and sorts by name, then value")
    func canonicalQuery() throws {
        let url = try #require(
            URL(string: "http://127.0.0.1:9000/cwa?prefix=version%2Fv1%2F&list-type=2&a=2&a=1&continuation-token=x%3D")
        )

        #expect(
            SigV4Signer.canonicalQuery(of: url) == "a=1&a=2&continuation-token=x%3D&list-type=2&prefix=version%2Fv1%2F"
        )
    }

    @Test("the signed host carries the port unless it is the scheme's default; an empty path is `/`")
    func hostAndPath() throws {
        let local = try #require(URL(string: "http://127.0.0.1:9000/cwa/version"))
        let plain = try #require(URL(string: "http://objects.example:80/cwa"))
        let secure = try #require(URL(string: "https://objects.example:443"))

        #expect(SigV4Signer.host(of: local) == "127.0.0.1:9000")
        #expect(SigV4Signer.host(of: plain) == "objects.example")
        #expect(SigV4Signer.host(of: secure) == "objects.example")
        #expect(SigV4Signer.canonicalURI(of: secure) == "/")
        #expect(SigV4Signer.canonicalURI(of: local) == "/cwa/version")
    }

    @Test("header names are lowercased and sorted, values trimmed with inner runs of spaces collapsed")
    func headerCanonicalForm() throws {
        let url = try #require(URL(string: "http://127.0.0.1:9000/cwa/key"))

        let canonical = self.signer.canonicalRequest(
            method: "put",
            url: url,
            headers: [
                ("X-Amz-Meta-Cwa-Hash", "  abc  "), ("Content-Type", "application/json"),
                ("Cache-Control", "public,  max-age=300"),
            ],
            payloadSHA256: self.empty,
            timestamp: "20240101T000000Z"
        )

        #expect(
            canonical.signedHeaders
                == "cache-control;content-type;host;x-amz-content-sha256;x-amz-date;x-amz-meta-cwa-hash"
        )
        #expect(
            canonical.text.hasPrefix(
                "PUT\n/cwa/key\n\ncache-control:public, max-age=300\ncontent-type:application/json\nhost:127.0.0.1:9000\n"
            )
        )
        #expect(canonical.text.contains("\nx-amz-meta-cwa-hash:abc\n"))
    }

    @Test("the same request signs the same; another secret, date or body signs differently; the secret never shows")
    func determinism() throws {
        let url = try #require(URL(string: "http://127.0.0.1:9000/cwa/version"))
        let other = SigV4Signer(
            accessKeyID: "AKIAIOSFODNN7EXAMPLE",
            secretAccessKey: "another-secret",
            region: "us-east-1"
        )

        let first = self.signer.sign(method: "GET", url: url, headers: [], payloadSHA256: self.empty, date: self.date)
        let again = self.signer.sign(method: "GET", url: url, headers: [], payloadSHA256: self.empty, date: self.date)
        let otherSecret = other.sign(method: "GET", url: url, headers: [], payloadSHA256: self.empty, date: self.date)
        let later = self.signer.sign(
            method: "GET",
            url: url,
            headers: [],
            payloadSHA256: self.empty,
            date: self.date + 1
        )
        let zeros = String(repeating: "0", count: 64)
        let otherBody = self.signer.sign(method: "GET", url: url, headers: [], payloadSHA256: zeros, date: self.date)

        #expect(self.signature(first) == self.signature(again))
        #expect(self.signature(first)?.count == 64)
        #expect(Set([first, otherSecret, later, otherBody].compactMap { self.signature($0) }).count == 4)
        #expect(!first.contains { $0.1.contains("wJalrXUtnFEMI") })
        #expect(!"\(self.signer)".contains("wJalrXUtnFEMI"))
    }
}
