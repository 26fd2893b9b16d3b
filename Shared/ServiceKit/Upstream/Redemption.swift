// The vocabulary of spending a single-use credential on behalf of a submission attempt: TANs and NHS submission
// tokens at verification-service, self-report OTPs at data-donation-service.

package import HTTPTypes

/// submission-service writes a submission's keys as pending under a new attempt id before it spends the credential,
/// and names that id when it spends it (`"submission"` in the request body). The spender records the id: the same
/// attempt repeating its call is answered as the first time, another attempt gets 410 with the spender's id in
/// `X-Redeemed-By`, and a lookup by the credential's SHA-256 tells which attempt spent it. So an attempt whose answer
/// or whose write was lost is completed rather than losing its keys (Services/Submission/README.md, "Order of work").
package enum Redemption {
    /// The header of a 410 answer: the lower-case UUID of the attempt that spent the credential (absent when it named
    /// none).
    package static let redeemedByHeader = HTTPField.Name("X-Redeemed-By")!
}
