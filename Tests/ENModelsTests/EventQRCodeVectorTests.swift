// The event QR code vectors: decoding the payload and reproducing the location id.

import ENCrypto
import ENModels
import Foundation
import SwiftProtobuf
import Testing

@Suite("Event QR code vectors")
struct EventQRCodeVectorTests {
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        struct Decoded: Decodable, Sendable {
            struct Location: Decodable, Sendable {
                let version: UInt32
                let description: String
                let address: String
                let start_timestamp: UInt64
                let end_timestamp: UInt64
            }
            struct CrowdNotifier: Decodable, Sendable {
                let version: UInt32
                let public_key_base64: String
                let cryptographic_seed_hex: String
            }
            struct CWALocation: Decodable, Sendable {
                let version: UInt32
                let type: Int
                let type_name: String
                let default_check_in_length_in_minutes: UInt32?
            }
            let version: UInt32
            let trace_location: Location
            let crowd_notifier: CrowdNotifier
            let cwa_location_data: CWALocation
        }
        let name: String
        let url: String
        let payload_hex: String
        let location_id_hex: String
        let location_id_hash_hex: String
        let decoded: Decoded
        var testDescription: String { self.name }
    }

    /// The vector file is not in the test bundle.
    struct VectorFileMissing: Error {}

    /// The vectors of `Vectors/event-qr-codes.json`; a missing, unreadable or malformed file throws, which fails
    /// every test that takes them as arguments.
    static func vectors() throws -> [Vector] {
        struct File: Decodable { let vectors: [Vector] }
        guard
            let url = Bundle.module.url(forResource: "event-qr-codes", withExtension: "json", subdirectory: "Vectors")
        else { throw VectorFileMissing() }
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: url)).vectors
    }

    @Test("the vector file is present and holds vectors")
    func vectorsLoaded() throws {
        #expect(try Self.vectors().count >= 3)
    }

    @Test("the URL fragment decodes to the payload bytes", arguments: try Self.vectors())
    func urlFragment(_ vector: Vector) throws {
        let payload = try #require(QRCodePayload.payloadBytes(fromURL: vector.url))

        #expect(Hex.encode(payload) == vector.payload_hex)
    }

    @Test("the payload decodes to the vector's fields, vendor data included", arguments: try Self.vectors())
    func decodesPayload(_ vector: Vector) throws {
        let bytes = try #require(Hex.decode(vector.payload_hex))

        let payload = try QRCodePayload(serializedBytes: bytes)
        let vendor = try CWALocationData(serializedBytes: payload.vendorData)

        #expect(payload.version == vector.decoded.version)
        #expect(payload.locationData.version == vector.decoded.trace_location.version)
        #expect(payload.locationData.description_p == vector.decoded.trace_location.description)
        #expect(payload.locationData.address == vector.decoded.trace_location.address)
        #expect(payload.locationData.startTimestamp == vector.decoded.trace_location.start_timestamp)
        #expect(payload.locationData.endTimestamp == vector.decoded.trace_location.end_timestamp)
        #expect(payload.crowdNotifierData.version == vector.decoded.crowd_notifier.version)
        #expect(
            payload.crowdNotifierData.publicKey.base64EncodedString() == vector.decoded.crowd_notifier.public_key_base64
        )
        #expect(
            Hex.encode(payload.crowdNotifierData.cryptographicSeed)
                == vector.decoded.crowd_notifier.cryptographic_seed_hex
        )
        #expect(vendor.version == vector.decoded.cwa_location_data.version)
        #expect(vendor.type.rawValue == vector.decoded.cwa_location_data.type)
        #expect(
            vendor.defaultCheckInLengthInMinutes == vector.decoded.cwa_location_data.default_check_in_length_in_minutes
                ?? 0
        )
    }

    @Test("the location id is SHA-256(\"CWA-GUID\" ‖ payload) and its hash matches", arguments: try Self.vectors())
    func locationID(_ vector: Vector) throws {
        let bytes = try #require(Hex.decode(vector.payload_hex))

        let locationID = QRCodePayload.locationID(ofSerializedPayload: bytes)

        #expect(Hex.encode(locationID) == vector.location_id_hex)
        #expect(Hex.encode(QRCodePayload.locationIDHash(ofLocationID: locationID)) == vector.location_id_hash_hex)
    }

    @Test(
        "re-encoding the decoded payload gives the same bytes (field numbers and types match the reference)",
        arguments: try Self.vectors()
    )
    func roundTrip(_ vector: Vector) throws {
        let bytes = try #require(Hex.decode(vector.payload_hex))

        let reencoded: [UInt8] = try QRCodePayload(serializedBytes: bytes).serializedBytes()

        #expect(reencoded == bytes)
    }
}
