// What the NHS test path at test-result-service stores and answers (nhs §3.2): a lab's result for a CTA token, what an
// upload did, and how long a token lives.

import ENNHS
import Foundation

/// A lab's result for a CTA token, validated.
struct NHSLabResult: Sendable, Equatable {
    var testEndDate: NHSTestEndDate
    var testResult: NHSTestResult
    var testKit: NHSTestKit
}

/// What a lab upload by CTA token did (nhs §3.2, step 2).
enum NHSUploadOutcome: Sendable, Equatable {
    case stored
    /// No order (or an expired one) for the token: 400.
    case noOrder
    /// The order has a result already: 409.
    case alreadyAvailable
}

/// A token drawn twice (in a batch, or one stored already).
struct NHSCollision: Error {}

/// How long a CTA token's row lives: four weeks from the order or the token API's upload (nhs §3.2).
enum NHSLifetime {
    static let token: TimeInterval = 28 * 86_400
}

/// The lab API's two body versions: V2 names the test kit, V1 is strict and means `LAB_RESULT`.
enum NHSUploadVersion: Sendable { case v1, v2 }
