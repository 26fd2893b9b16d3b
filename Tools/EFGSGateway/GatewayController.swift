// The gateway's API for countries (cwa-satellites §5.2–§5.6): upload, download, audit, callbacks.

import ENCrypto
import ENFederation
import ENModels
import ENServiceKit
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SwiftASN1
import SwiftProtobuf
import X509

struct GatewayController: Sendable {
    let store: GatewayStore
    let settings: GatewaySettings
    let clock: WallClock
    let metrics: GatewayMetrics

    func addRoutes(to group: RouterGroup<CountryRequestContext>) {
        group.post("diagnosiskeys/upload") { request, context in try await self.upload(request, context) }
        group.get("diagnosiskeys/download/:date") { request, context in try await self.download(request, context) }
        group.get("diagnosiskeys/audit/download/:date/:batchTag") { request, context in
            try await self.audit(request, context)
        }
        group.get("diagnosiskeys/callback") { _, context in try await self.listCallbacks(context) }
        group.put("diagnosiskeys/callback/:id") { request, context in try await self.putCallback(request, context) }
        group.delete("diagnosiskeys/callback/:id") { _, context in try await self.deleteCallback(context) }
        group.on("diagnosiskeys", method: .options) { _, _ in
            Response(
                status: .ok,
                headers: [
                    .allow: "POST,GET,OPTIONS",
                    .accept: "\(FederationProtocol.jsonMediaType), \(FederationProtocol.protobufMediaType)",
                ]
            )
        }
    }

    private func caller(_ context: CountryRequestContext) throws -> CountryIdentity {
        guard let identity = context.identity else { throw GatewayError(.forbidden, "not authenticated") }
        return identity
    }

    // MARK: - Upload

    func upload(_ request: Request, _ context: CountryRequestContext) async throws -> Response {
        let caller = try self.caller(context)
        let format: MediaFormat
        switch MediaFormat.parse(request.headers[.contentType]) {
        case .success(let parsed): format = parsed
        case .failure(.incompatibleVersion): throw self.refuse(.notAcceptable, "incompatible version", "version")
        case .failure: throw self.refuse(.badRequest, "unknown content type or missing version", "content_type")
        }
        let body = try await request.body.collect(upTo: self.settings.maximumBodyBytes)
        let batch: DiagnosisKeyBatch
        do {
            switch format {
            case .protobuf: batch = try DiagnosisKeyBatch(serializedBytes: Array(buffer: body))
            case .json: batch = try DiagnosisKeyBatch(jsonUTF8Bytes: Array(buffer: body))
            }
        } catch {
            throw self.refuse(.badRequest, "the body is not a DiagnosisKeyBatch", "body")
        }
        guard let tag = request.headers[HTTPField.Name(FederationProtocol.batchTagHeader)!], !tag.isEmpty,
            tag.count <= 100
        else {
            throw self.refuse(.badRequest, "the batchTag header is missing", "batch_tag")
        }
        guard let signature = request.headers[HTTPField.Name(FederationProtocol.batchSignatureHeader)!],
            !signature.isEmpty
        else {
            throw self.refuse(.badRequest, "the batchSignature header is missing", "signature")
        }
        let now = self.clock.now
        guard !batch.keys.isEmpty else { throw self.refuse(.badRequest, "the batch holds no key", "validation") }
        for key in batch.keys {
            if let problem = GatewayKeyRules.problem(with: key, now: now) {
                throw self.refuse(.badRequest, problem, "validation")
            }
        }
        guard batch.keys.count <= FederationProtocol.maximumUploadKeys else {
            throw self.refuse(.contentTooLarge, "more than \(FederationProtocol.maximumUploadKeys) keys", "too_large")
        }
        guard try await !self.store.isTagUsed(tag) else {
            throw self.refuse(.conflict, "the batchTag was used before", "duplicate_tag")
        }
        guard let signer = await self.verify(signature, keys: batch.keys, country: caller.country, now: now) else {
            // Deliberately generic, as the reference (efgs-federation-gateway#232).
            throw self.refuse(.badRequest, "Invalid signature", "signature")
        }
        guard batch.keys.allSatisfy({ $0.origin == caller.country }) else {
            throw self.refuse(.badRequest, "every key's origin must be the uploading country", "origin")
        }
        let stored = try await self.store.storeUpload(
            tag: tag,
            country: caller.country,
            uploaderThumbprint: caller.thumbprint,
            signingThumbprint: signer,
            signature: signature,
            keys: batch.keys
        )
        switch stored {
        case .stored:
            self.metrics.recordUpload("created", keys: batch.keys.count)
            context.logger.info("Batch uploaded", metadata: ["keys": "\(batch.keys.count)"])
            return Response(status: .created, headers: [HTTPField.Name(FederationProtocol.batchTagHeader)!: tag])
        case .duplicateTag:
            throw self.refuse(.conflict, "the batchTag was used before", "duplicate_tag")
        case .duplicateKeys(let conflicts):
            self.metrics.recordUpload("partial", keys: 0)
            let conflicting = Set(conflicts)
            let body = BatchUploadResponse(
                created: batch.keys.indices.filter { !conflicting.contains($0) },
                conflict: conflicts
            )
            return Response(
                status: HTTPResponse.Status(code: 207),
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(body)))
            )
        }
    }

    /// The thumbprint of the registered, unrevoked signing certificate of `country` that signed `keys`, or `nil`.
    private func verify(
        _ signature: String,
        keys: [FederationDiagnosisKey],
        country: String,
        now: Date
    ) async -> String? {
        guard let registered = try? await self.store.certificates(country: country, kind: .signing) else { return nil }
        let signing = registered.filter { !$0.revoked }
        let anchors = signing.compactMap { row in
            (try? Certificate(pemEncoded: row.pem)).map { BatchTrustAnchor(certificate: $0, country: country) }
        }
        let result = await BatchSignatureVerifier(anchors: anchors).verify(
            signature: signature,
            batchBytes: BatchSignatureBytes.batch(of: keys),
            country: country,
            at: now
        )
        guard case .success(let certificate) = result, let der = try? certificate.derEncoded()
        else { return nil }
        let thumbprint = CertificateThumbprint(derEncodedCertificate: der).hex
        return signing.contains { $0.thumbprint == thumbprint } ? thumbprint : nil
    }

    private func refuse(_ status: HTTPResponse.Status, _ message: String, _ reason: String) -> GatewayError {
        self.metrics.recordRefusal(reason)
        return GatewayError(status, message)
    }

    // MARK: - Download

    func download(_ request: Request, _ context: CountryRequestContext) async throws -> Response {
        let caller = try self.caller(context)
        guard case .success(let format) = MediaFormat.parse(request.headers[.accept]) else {
            throw GatewayError(.unsupportedMediaType, "Accept must name a supported type with version 1.0")
        }
        let (day, date) = try self.day(context)
        let requested = FederationProtocol.batchTag(request.headers[HTTPField.Name(FederationProtocol.batchTagHeader)!])
        guard let batch = try await self.store.downloadBatch(day: day, tag: requested) else {
            throw GatewayError(.notFound, requested == nil ? "no batch for that day" : "unknown batch tag")
        }
        guard let batchDate = FederationProtocol.day(parsing: batch.day), batchDate >= date else {
            throw GatewayError(.badRequest, "the batch was created before the requested day")
        }
        var keys = DiagnosisKeyBatch()
        keys.keys = try await self.store.keys(of: batch.tag, excluding: caller.country)
        self.metrics.recordDownload(keys: keys.keys.count)
        let body: [UInt8] =
            switch format {
            case .protobuf: try keys.serializedBytes()
            case .json: Array(try keys.jsonString().utf8)
            }
        return Response(
            status: .ok,
            headers: [
                .contentType: format == .protobuf
                    ? FederationProtocol.protobufMediaType : FederationProtocol.jsonMediaType,
                HTTPField.Name(FederationProtocol.batchTagHeader)!: batch.tag,
                HTTPField.Name(FederationProtocol.nextBatchTagHeader)!: batch.nextTag ?? FederationProtocol.noBatchTag,
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: body))
        )
    }

    /// The path's day: 400 when it is no date, 410 when it is older than the gateway keeps.
    private func day(_ context: CountryRequestContext) throws -> (String, Date) {
        guard let text = context.parameters.get("date"), let date = FederationProtocol.day(parsing: text) else {
            throw GatewayError(.badRequest, "the date must be yyyy-MM-dd")
        }
        let oldest = Calendar.utc.startOfDay(for: self.clock.now).addingTimeInterval(
            -Double(self.settings.maximumAgeDays) * 86_400
        )
        guard date >= oldest else {
            throw GatewayError(.gone, "the date is older than \(self.settings.maximumAgeDays) days")
        }
        return (text, date)
    }

    // MARK: - Audit

    func audit(_ request: Request, _ context: CountryRequestContext) async throws -> Response {
        _ = try self.caller(context)
        let (day, _) = try self.day(context)
        guard let tag = context.parameters.get("batchTag"),
            let batch = try await self.store.downloadBatch(day: day, tag: tag), batch.day == day
        else { throw GatewayError(.notFound, "no such batch on that day") }
        let uploads = try await self.store.uploadBatches(of: batch.tag)
        // The uploaders' AUTHENTICATION and SIGNING rows, and only those.
        let certificates = try await self.store.certificates(
            thumbprints: Array(Set(uploads.flatMap { [$0.uploaderThumbprint, $0.signingThumbprint] }))
        )
        // (A thumbprint names one row per kind: the table's key.)
        let rows = { (kind: CountryCertificate.Kind) in
            Dictionary(uniqueKeysWithValues: certificates.filter { $0.kind == kind }.map { ($0.thumbprint, $0) })
        }
        let (authentication, signingRows) = (rows(.authentication), rows(.signing))
        let uploader = { (upload: UploadBatchRecord) in authentication[upload.uploaderThumbprint] }
        let signing = { (upload: UploadBatchRecord) in signingRows[upload.signingThumbprint] }
        let formatter = ISO8601DateFormatter()
        let entries = uploads.map { upload in
            AuditEntryBody(
                country: upload.country,
                uploadedTime: formatter.string(from: upload.uploadedAt),
                uploaderCertificate: uploader(upload)?.pem,
                uploaderThumbprint: upload.uploaderThumbprint,
                uploaderOperatorSignature: uploader(upload)?.signature,
                signingCertificate: signing(upload)?.pem,
                uploaderSigningThumbprint: upload.signingThumbprint,
                signingCertificateOperatorSignature: signing(upload)?.signature,
                amount: upload.amount,
                batchSignature: upload.signature
            )
        }
        return Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(entries)))
        )
    }

    // MARK: - Callbacks

    func listCallbacks(_ context: CountryRequestContext) async throws -> Response {
        let caller = try self.caller(context)
        let list = try await self.store.callbacks(country: caller.country)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(list)))
        )
    }

    func putCallback(_ request: Request, _ context: CountryRequestContext) async throws -> Response {
        let caller = try self.caller(context)
        guard let id = context.parameters.get("id"), (1...64).contains(id.count),
            id.unicodeScalars.allSatisfy({
                $0.isASCII && $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_"
            })
        else { throw GatewayError(.badRequest, "the callback id must be 1 to 64 letters, digits, - or _") }
        guard let url = request.uri.queryParameters["url"].map(String.init) else {
            throw GatewayError(.badRequest, "the url parameter is missing")
        }
        if let problem = await CallbackURLCheck(allowPrivate: self.settings.allowPrivateCallbacks).problem(with: url) {
            throw GatewayError(.badRequest, problem)
        }
        let registered = try await self.store.certificates(country: caller.country, kind: .callback)
        guard registered.contains(where: { !$0.revoked }) else {
            throw GatewayError(.badRequest, "the country has no CALLBACK certificate")
        }
        try await self.store.putCallback(country: caller.country, id: id, url: url)
        return Response(status: .ok)
    }

    func deleteCallback(_ context: CountryRequestContext) async throws -> Response {
        let caller = try self.caller(context)
        guard let id = context.parameters.get("id"),
            try await self.store.deleteCallback(country: caller.country, id: id)
        else {
            throw GatewayError(.notFound, "no such callback")
        }
        return Response(status: .ok)
    }
}

/// One audit entry (cwa-satellites §5.6). The operator signatures of the reference's certificate rows are not kept
/// by this gateway, so they are absent.
struct AuditEntryBody: Codable, Sendable {
    var country: String
    var uploadedTime: String
    var uploaderCertificate: String?
    var uploaderThumbprint: String
    /// The trust anchor's signature of the uploader's certificate row.
    var uploaderOperatorSignature: String?
    var signingCertificate: String?
    var uploaderSigningThumbprint: String
    /// The trust anchor's signature of the signing certificate's row.
    var signingCertificateOperatorSignature: String?
    var amount: Int
    var batchSignature: String
}

/// The two media types with their mandatory `version=1.0`.
enum MediaFormat: Sendable, Equatable {
    case protobuf
    case json

    enum Problem: Error { case unknownType, missingVersion, incompatibleVersion }

    /// `application/protobuf; version=1.0` or `application/json; version=1.0` (parameters in any order and case).
    static func parse(_ value: String?) -> Result<MediaFormat, Problem> {
        guard let value else { return .failure(.unknownType) }
        let parts = value.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let format: MediaFormat
        switch parts.first {
        case "application/protobuf", "application/x-protobuf": format = .protobuf
        case "application/json": format = .json
        default: return .failure(.unknownType)
        }
        guard let version = parts.dropFirst().first(where: { $0.hasPrefix("version=") })?.dropFirst("version=".count)
        else {
            return .failure(.missingVersion)
        }
        let numbers = version.split(separator: ".", omittingEmptySubsequences: false)
        guard numbers.count == 2, numbers.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }) else {
            return .failure(.missingVersion)
        }
        guard numbers == ["1", "0"] else { return .failure(.incompatibleVersion) }
        return .success(format)
    }
}
