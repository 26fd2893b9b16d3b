// The gateway's per-key validation (cwa-satellites §5.3): one bad key refuses the whole upload.

package import ENModels
package import Foundation

/// What the gateway requires of every uploaded key. DSOS is not range-checked, as in the reference.
package enum GatewayKeyRules {
    /// The transmission risk level that means "unknown".
    package static let unknownTransmissionRiskLevel = Int32.max

    /// Why `key` is refused at `now`, or `nil` when it is acceptable.
    package static func problem(with key: FederationDiagnosisKey, now: Date) -> String? {
        guard key.keyData.count == 16 else { return "keyData must be 16 bytes" }
        let midnight = Calendar.utc.startOfDay(for: now)
        let earliest = Int64((midnight.timeIntervalSince1970 - 15 * 86_400) / 600)
        let latest = Int64(now.timeIntervalSince1970 / 600) + 1
        guard (earliest...latest).contains(Int64(key.rollingStartIntervalNumber)) else {
            return "rollingStartIntervalNumber is out of range"
        }
        guard (1...144).contains(key.rollingPeriod) else { return "rollingPeriod must be 1 to 144" }
        guard
            (0...8).contains(key.transmissionRiskLevel)
                || key.transmissionRiskLevel == self.unknownTransmissionRiskLevel
        else { return "transmissionRiskLevel must be 0 to 8 or 2147483647" }
        return nil
    }
}
