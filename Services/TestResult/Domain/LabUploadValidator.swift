// The rules a lab or portal batch must satisfy before anything is stored (cwa-satellites §2.1).

import ENModels
import Foundation

/// Validates batch uploads. Pure: no I/O, time passed in.
struct LabUploadValidator: Sendable {
    /// Earliest plausible sample collection: 2020-01-01T00:00:00Z.
    static let earliestSampleTime: Int64 = 1_577_836_800
    /// A lab clock may run this far ahead of ours.
    static let allowedClockSkew: Int64 = 3600

    let maxResults: Int

    /// The results of `batch` for tests of `kind` from the lab named `lab` by its certificate (`nil` without lab
    /// certificates), in upload order with later duplicates of an id replacing earlier ones (a batch is applied as
    /// if its entries were processed in order). Any invalid field rejects the batch. The results belong to `lab`;
    /// the body's `labId` may only repeat it.
    func validate(
        _ batch: LabResultBatch,
        kind: TestKind,
        lab: String? = nil,
        now: Date
    ) throws(LabUploadError) -> [ResultUpload] {
        var labID = try Self.validateLabID(batch.labId)
        if let lab {
            guard labID == nil || labID == lab else { throw .labIDNotCertificates }
            labID = lab
        }
        guard let entries = batch.testResults else { throw .missing("testResults") }
        guard !entries.isEmpty else { throw .noResults }
        guard entries.count <= self.maxResults else { throw .tooManyResults(max: self.maxResults) }

        var uploads: [ResultUpload] = []
        var positionByKey: [String: Int] = [:]
        for (index, entry) in entries.enumerated() {
            let upload = try Self.validate(entry, index: index, kind: kind, labID: labID, lab: lab, now: now)
            if let position = positionByKey[upload.key] {
                uploads[position] = upload
            } else {
                positionByKey[upload.key] = uploads.count
                uploads.append(upload)
            }
        }
        return uploads
    }

    /// The id of a single-result lookup.
    static func validateLookup(_ request: ResultLookupRequest) throws(LabUploadError) -> TestID {
        guard let text = request.id else { throw .missing("id") }
        guard let id = TestID(text) else { throw .invalidID(path: "id") }
        return id
    }

    private static func validate(
        _ entry: LabResultEntry,
        index: Int,
        kind: TestKind,
        labID: String?,
        lab: String?,
        now: Date
    ) throws(LabUploadError) -> ResultUpload {
        let path = "testResults[\(index)]"
        guard let idText = entry.id else { throw .missing("\(path).id") }
        guard let id = TestID(idText) else { throw .invalidID(path: "\(path).id") }
        guard let code = entry.result else { throw .missing("\(path).result") }
        let allowed = Self.allowedCodes(kind)
        guard allowed.contains(code), let result = LabTestResult(code: code) else {
            throw .resultNotAllowed(path: "\(path).result", allowed: allowed)
        }
        let sampleTime = try Self.validateSampleTime(entry.sc, path: "\(path).sc", now: now)
        return ResultUpload(
            key: id.storageKey(for: kind),
            result: result,
            sampleCollectedAt: sampleTime,
            labID: labID,
            labAuthenticated: lab != nil,
            dobProtected: entry.dobProtected ?? false
        )
    }

    /// Codes a batch of each kind may carry (cwa-satellites §2.1): labs report PCR outcomes 1–3 only (pending and
    /// redeemed are server states); rapid and PoC-NAT portals may send their whole block.
    static func allowedCodes(_ kind: TestKind) -> ClosedRange<Int> {
        switch kind {
        case .pcr: 1...3
        case .rapidAntigen: 5...9
        case .pointOfCareNAT: 10...14
        }
    }

    private static func validateSampleTime(_ seconds: Int64?, path: String, now: Date) throws(LabUploadError) -> Date {
        guard let seconds else { return now }
        let latest = Int64(now.timeIntervalSince1970) + Self.allowedClockSkew
        guard seconds >= Self.earliestSampleTime, seconds <= latest else { throw .sampleTimeOutOfRange(path: path) }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    private static func validateLabID(_ labID: String?) throws(LabUploadError) -> String? {
        guard let labID else { return nil }
        // The reference bounds labId at 64 characters; the column is varchar(64), which counts code points.
        let scalars = labID.unicodeScalars
        guard (1...64).contains(scalars.count), scalars.allSatisfy(Self.isPrintable) else { throw .invalidLabID }
        return labID
    }

    /// Letters, marks, numbers, punctuation, symbols and spaces; no control, format (bidi overrides, zero-width),
    /// private-use, unassigned or separator-line characters.
    private static func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned, .lineSeparator, .paragraphSeparator: false
        default: true
        }
    }
}
