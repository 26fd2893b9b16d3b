// Two phones meeting, and a phone finding published keys among what it heard.

import Foundation

/// The Bluetooth metadata of an ENF v1.x broadcast: version 0x40 (1.0), transmit power, two reserved bytes.
enum BroadcastMetadata {
    static let transmitPower: Int8 = 8

    static var bytes: [UInt8] { [0x40, UInt8(bitPattern: Self.transmitPower), 0, 0] }
}

enum Encounter {
    /// What `listener` hears when it is near `broadcaster` for `minutes` from `start`: one observation per 10-minute
    /// interval touched, with the RPI and AEM of the broadcaster's key of that interval.
    static func observe(
        broadcaster: PhoneState,
        from start: Date,
        minutes: Int,
        attenuation: Int
    ) throws -> [PhoneState.Observation] {
        guard minutes > 0 else { throw ClientFailure("--minutes must be positive") }
        var observations: [PhoneState.Observation] = []
        var remaining = minutes
        var moment = start
        while remaining > 0 {
            let interval = ENInterval.number(of: moment)
            let intervalEnd = ENInterval.date(of: interval + 1)
            let heard = min(remaining, max(1, Int((intervalEnd.timeIntervalSince(moment) / 60).rounded(.up))))
            guard let key = broadcaster.key(at: interval) else {
                throw ClientFailure(
                    "the other phone has no key for \(ENInterval.date(of: interval)) (its keys cover the last \(broadcaster.keys.count) days)"
                )
            }
            let rpik = ExposureCrypto.rollingProximityIdentifierKey(key.keyData)
            let rpi = ExposureCrypto.rollingProximityIdentifier(key: rpik, interval: interval)
            let aemk = ExposureCrypto.associatedEncryptedMetadataKey(key.keyData)
            let aem = ExposureCrypto.associatedEncryptedMetadata(key: aemk, rpi: rpi, metadata: BroadcastMetadata.bytes)
            observations.append(
                .init(rpi: Data(rpi), aem: Data(aem), interval: interval, minutes: heard, attenuation: attenuation)
            )
            remaining -= heard
            moment = intervalEnd
        }
        return observations
    }

    /// Published keys matched against observations. A match needs the observation's interval inside the key's
    /// validity and the RPI derived from the key for that interval to equal the one heard; the AEM must then decrypt
    /// to metadata of major version 1. Each key counts once, however many archives carry it, and keys in `known`
    /// (matched by an earlier sync: an hour's key comes again in its day's archive) not at all.
    static func match(
        keys: [(key: ExposureKey, transmissionRiskLevel: Int, archive: String)],
        observations: [PhoneState.Observation],
        known: Set<Data> = []
    ) -> [(exposure: PhoneState.Exposure, keyData: Data)] {
        guard !observations.isEmpty else { return [] }
        var seen = known
        var exposures: [(exposure: PhoneState.Exposure, keyData: Data)] = []
        for candidate in keys where seen.insert(candidate.key.keyData).inserted {
            let heard = observations.filter { candidate.key.covers($0.interval) }
            guard !heard.isEmpty else { continue }
            let rpik = ExposureCrypto.rollingProximityIdentifierKey(candidate.key.keyData)
            let aemk = ExposureCrypto.associatedEncryptedMetadataKey(candidate.key.keyData)
            let matched = heard.filter { observation in
                let rpi = ExposureCrypto.rollingProximityIdentifier(key: rpik, interval: observation.interval)
                guard Data(rpi) == observation.rpi else { return false }
                let metadata = ExposureCrypto.associatedEncryptedMetadata(
                    key: aemk,
                    rpi: rpi,
                    metadata: Array(observation.aem)
                )
                // Byte 0 of the metadata: bits 7–6 the major version (01), 5–4 the minor one, 3–0 reserved.
                return metadata.first.map { $0 & 0xC0 == 0x40 } ?? false
            }
            guard let first = matched.first else { continue }
            exposures.append(
                (
                    PhoneState.Exposure(
                        day: utcDay(ENInterval.date(of: first.interval)),
                        minutes: matched.reduce(0) { $0 + $1.minutes },
                        lowestAttenuation: matched.map(\.attenuation).min() ?? 0,
                        transmissionRiskLevel: candidate.transmissionRiskLevel,
                        archive: candidate.archive
                    ),
                    candidate.key.keyData
                )
            )
        }
        return exposures
    }
}

/// The UTC day of `date` as `YYYY-MM-DD`, as the CDN names days.
func utcDay(_ date: Date) -> String {
    date.formatted(Date.ISO8601FormatStyle().year().month().day())
}
