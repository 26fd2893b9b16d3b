// Request and response bodies of the lab, portal and internal APIs (cwa-satellites §2.1).

import Hummingbird

/// `{"labId"?: string, "testResults": [...]}`. Fields are optional here so that a missing field is reported by
/// the validator with its path; wrong types are reported by the JSON decoder.
struct LabResultBatch: Decodable, Sendable {
    let labId: String?
    let testResults: [LabResultEntry]?
}

/// `{"id": "<hash>", "result": int, "sc"?: epoch seconds, "dobProtected"?: bool}`; `dobProtected` is our extension.
struct LabResultEntry: Decodable, Sendable {
    let id: String?
    let result: Int?
    let sc: Int64?
    let dobProtected: Bool?
}

/// `{"id": "<hash>", "sc"?: int}`. `sc` is accepted and ignored (cwa-satellites §2.1): a pending row created by a
/// lookup is dated now, because the caller (verification or a portal) does not know when the sample was taken.
struct ResultLookupRequest: Decodable, Sendable {
    let id: String?
    let sc: Int64?
}

/// The answer to verification-service: `{"testResult": 0–9, "sc": epoch seconds, "labId"?: string,
/// "dobProtected"?: true}` (the last only for a result the lab protected with the date of birth).
struct VerificationResultResponse: ResponseCodable, Sendable, Equatable {
    let testResult: Int
    let sc: Int64
    let labId: String?
    let dobProtected: Bool?
}

/// The answer to a portal lookup: `{"testResult": int, "labId"?: string}`.
struct PortalResultResponse: ResponseCodable, Sendable, Equatable {
    let testResult: Int
    let labId: String?
}
