// What federation-service asks of the federation gateway (cwa-server §5.1): the calls and their outcomes.

import ENFederation
import ENModels

/// The gateway's API as the national backend uses it.
protocol FederationGateway: Sendable {
    /// Uploads one signed batch.
    func upload(_ batch: DiagnosisKeyBatch, tag: String, signature: String) async throws -> UploadAnswer
    /// A batch of day `day` (`yyyy-MM-dd`): the first of that day without `tag`.
    func download(day: String, tag: String?) async throws -> DownloadAnswer
    /// The audit entries of batch `tag` of day `day`: one per upload batch it holds, in the order of its keys.
    func audit(day: String, tag: String) async throws -> [AuditEntry]
    /// The callbacks registered for this country.
    func callbacks() async throws -> [CallbackRegistration]
    /// Registers (or updates) callback `id`.
    func registerCallback(id: String, url: String) async throws
}

/// How the gateway answered an upload.
enum UploadAnswer: Sendable, Equatable {
    /// 201: every key was taken.
    case created
    /// 207: per-key outcomes.
    case multiStatus(BatchUploadResponse)
    /// 409: the batch tag was used before; nothing was taken.
    case duplicateTag
    /// Another 4xx: nothing was taken; the message is the gateway's.
    case refused(status: Int, message: String)
}

/// A downloaded batch.
enum DownloadAnswer: Sendable {
    case batch(DownloadedBatch)
    /// 404: no batch that day, or the tag is unknown.
    case notFound
    /// 410: the day is older than the gateway keeps.
    case gone
}

struct DownloadedBatch: Sendable {
    var tag: String
    /// `nil` when the gateway said `null`.
    var nextTag: String?
    var batch: DiagnosisKeyBatch
}

/// One upload batch inside a download batch, with what is needed to check its signature (cwa-satellites §5.6).
struct AuditEntry: Sendable, Codable, Equatable {
    var country: String
    var amount: Int
    var batchSignature: String
    var signingCertificate: String?
    var uploaderThumbprint: String?
    var uploaderSigningThumbprint: String?
    var uploadedTime: String?
}

/// The gateway could not be reached or answered with a server error after the retries, or refused this backend
/// (403, fatal: the certificates are wrong).
struct GatewayUnavailable: Error, CustomStringConvertible {
    var description: String
    var forbidden = false
}
