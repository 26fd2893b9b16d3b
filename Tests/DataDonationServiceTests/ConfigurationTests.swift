// data-donation-service's settings as --help lists them, in each Android attestation mode.

import ENServiceKit
import ENTestSupport
import Testing

@testable import DataDonationService

@Suite("Data donation configuration")
struct ConfigurationTests {
    static let attestationSettings = [
        "ATTESTATION_TRUST_ROOTS", "PLAY_INTEGRITY_DECRYPTION_KEY", "PLAY_INTEGRITY_VERIFICATION_KEY",
    ]

    @Test(
        "--help lists the settings of every Android attestation mode, whichever mode is configured",
        arguments: ["safetynet", "play-integrity", "both"]
    )
    func helpListsEveryMode(mode: String) throws {
        let world = try DonationWorld()
        let settings = SettingsReader(values: world.settings(["ANDROID_ATTESTATION": mode]))
        _ = DataDonationConfiguration(settings: settings)
        let listed = Set(settings.settings.map(\.name))
        for name in Self.attestationSettings {
            #expect(listed.contains(name), "\(name) with ANDROID_ATTESTATION=\(mode)")
        }
        #expect(settings.settings.first { $0.name == "PLAY_INTEGRITY_DECRYPTION_KEY" }?.isSecret == true)
    }

    @Test("a mode needs only its own keys: safetynet starts without the Play Integrity keys, and the other way round")
    func modesNeedTheirOwnKeys() throws {
        let world = try DonationWorld()
        let safetyNet = SettingsReader(
            values: world.settings(["ANDROID_ATTESTATION": "safetynet"]).filter { !$0.key.hasPrefix("PLAY_INTEGRITY") }
        )
        _ = DataDonationConfiguration(settings: safetyNet)
        #expect(safetyNet.problems.isEmpty, "\(safetyNet.problems)")
        let playIntegrity = SettingsReader(
            values: world.settings(["ANDROID_ATTESTATION": "play-integrity"]).filter {
                $0.key != "ATTESTATION_TRUST_ROOTS"
            }
        )
        _ = DataDonationConfiguration(settings: playIntegrity)
        #expect(playIntegrity.problems.isEmpty, "\(playIntegrity.problems)")
    }
}
