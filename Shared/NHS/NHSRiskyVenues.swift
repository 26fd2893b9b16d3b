// Risky venues of the NHS family (nhs §5): the upload's CSV, checked row by row, and the list phones download.

import ENCrypto
import ENModels
import ENServiceKit
package import Foundation

/// A venue where people were at risk, in one time window, with the message the app shows.
package struct NHSRiskyVenue: Sendable, Equatable {
    /// 1 to 12 characters of the QR codes' alphabet.
    package var id: String
    package var from: Date
    package var until: Date
    /// `M1` (inform) or `M2` (book a test).
    package var messageType: String

    package init(id: String, from: Date, until: Date, messageType: String) {
        self.id = id
        self.from = from
        self.until = until
        self.messageType = messageType
    }

    /// The venue ids' alphabet: `[CDEFHJKMPRTVWXY2345689]`.
    package static let alphabet = Set("CDEFHJKMPRTVWXY2345689".utf8)

    package static func isValidID(_ id: String) -> Bool {
        (1...12).contains(id.utf8.count) && id.utf8.allSatisfy { Self.alphabet.contains($0) }
    }
}

/// The list as phones download it (`/distribution/risky-venues`): `{"venues":[{"id","riskyWindow":{"from","until"},
/// "messageType"}]}`; no `optionalParameter`, since no message type takes one.
package enum NHSRiskyVenueList {
    package static func json(_ venues: [NHSRiskyVenue]) -> [UInt8] {
        let entries = venues.map { venue in
            #"{"id":"\#(venue.id)","riskyWindow":{"from":"\#(NHSInstant.text(venue.from))","until":"\#(NHSInstant.text(venue.until))"},"messageType":"\#(venue.messageType)"}"#
        }
        return Array(#"{"venues":[\#(entries.joined(separator: ","))]}"#.utf8)
    }
}

/// One data row of an upload and what is wrong with it (`nil`: nothing).
package struct NHSRiskyVenueRow: Sendable, Equatable {
    /// 1 for the first row after the header.
    package var number: Int
    package var fields: [String]
    package var venue: NHSRiskyVenue?
    package var problem: String?
}

/// The CSV of `POST /upload/identified-risk-venues`:
///
/// ```
/// # venue_id, start_time, end_time, message_type, optional_parameter
/// "CD2", "2019-07-04T13:33:03Z", "2019-07-14T23:33:03Z", "M1", ""
/// ```
///
/// Checked whole before anything is published, with the reference's messages (`validation error: …`, the first
/// failure wins) and the contract's rules that the reference left out: unique venue ids, windows that start
/// yesterday or before. A parameter is refused for M1 and M2 whatever its length.
package enum NHSRiskyVenueCSV {
    package static let header = ["venue_id", "start_time", "end_time", "message_type", "optional_parameter"]
    package static let maxBytes = 1_048_576

    /// The venues, or the first problem (the message after `validation error: `).
    package static func parse(_ bytes: [UInt8], contentType: String?, now: Date) -> Result<[NHSRiskyVenue], Problem> {
        switch self.rows(bytes, contentType: contentType, now: now) {
        case .failure(let problem): return .failure(problem)
        case .success(let rows):
            if let bad = rows.first(where: { $0.problem != nil }) { return .failure(Problem(bad.problem ?? "")) }
            return .success(rows.compactMap(\.venue))
        }
    }

    /// Every data row with its own problem (for an officer's preview), or a problem of the whole upload.
    package static func rows(_ bytes: [UInt8], contentType: String?, now: Date) -> Result<[NHSRiskyVenueRow], Problem> {
        guard !bytes.isEmpty else { return .failure(Problem("No payload")) }
        guard contentType?.lowercased().hasPrefix("text/csv") == true else {
            return .failure(Problem("Content type is not text/csv"))
        }
        guard bytes.count <= Self.maxBytes else { return .failure(Problem("Csv content is more than 1MB")) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(Problem("Csv content is not UTF-8"))
        }
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map(String.init)
        // A final line break ends the last row; it does not start an empty one.
        if lines.last == "" { lines.removeLast() }
        guard let first = lines.first,
            let names = Self.fields(first.hasPrefix("#") ? String(first.dropFirst()) : first),
            names.map({ $0.lowercased() }) == Self.header
        else {
            return .failure(Problem("Invalid header. Expected [\(Self.header.joined(separator: ", "))]"))
        }
        let startOfToday = NHSSigner.utc.startOfDay(for: now)
        var seen: Set<String> = []
        var rows: [NHSRiskyVenueRow] = []
        for (index, line) in lines.dropFirst().enumerated() {
            let number = index + 1
            guard let fields = Self.fields(line), fields.count == 5 else {
                rows.append(NHSRiskyVenueRow(number: number, fields: [line], problem: "Invalid data in row \(number)"))
                continue
            }
            var row = NHSRiskyVenueRow(number: number, fields: fields)
            switch Self.venue(fields, seen: seen, startOfToday: startOfToday) {
            case .success(let venue):
                row.venue = venue
                seen.insert(venue.id)
            case .failure(let problem):
                row.problem = problem.message
            }
            rows.append(row)
        }
        return .success(rows)
    }

    /// The row's venue, or its problem: the reference's checks in its order, then the contract's.
    private static func venue(
        _ fields: [String],
        seen: Set<String>,
        startOfToday: Date
    ) -> Result<NHSRiskyVenue, Problem> {
        guard NHSRiskyVenue.isValidID(fields[0]) else {
            return .failure(Problem("VenueId must match [CDEFHJKMPRTVWXY2345689]{1,12}"))
        }
        guard let from = Self.instant(fields[1]), let until = Self.instant(fields[2]) else {
            return .failure(Problem("Date did not conform to expected format yyyy-MM-dd'T'HH:mm:ss'Z'"))
        }
        // The reference says "<=" and checks "<": a window must not be empty.
        guard from < until else { return .failure(Problem("Start date must be <= end date")) }
        guard fields[3] == "M1" || fields[3] == "M2" else { return .failure(Problem("Message Type must match M[1-2]")) }
        // Neither M1 nor M2 takes a parameter, so the type's rule is the first a parameter fails; the contract's
        // 32-character limit would apply to a type that took one.
        guard fields[4].isEmpty else {
            return .failure(Problem("Message type \(fields[3]) does not support optional parameter"))
        }
        guard !seen.contains(fields[0]) else { return .failure(Problem("Duplicate venue id \(fields[0])")) }
        guard from < startOfToday else { return .failure(Problem("Start date must be yesterday or before")) }
        return .success(NHSRiskyVenue(id: fields[0], from: from, until: until, messageType: fields[3]))
    }

    /// One RFC 4180 record: comma-separated, optionally quoted fields (`""` is a quote inside a quoted field),
    /// surrounding spaces trimmed; `nil` for a line that is none (an unterminated quote, text after a closing one).
    static func fields(_ line: String) -> [String]? {
        var fields: [String] = []
        var current = ""
        var quoted = false
        var closed = false
        var characters = Array(line)[...]
        while let character = characters.popFirst() {
            if quoted {
                if character == "\"" {
                    if characters.first == "\"" {
                        characters.removeFirst()
                        current.append("\"")
                    } else {
                        quoted = false
                        closed = true
                    }
                } else {
                    current.append(character)
                }
            } else if character == "," {
                fields.append(current)
                current = ""
                closed = false
            } else if character == "\"" && current.allSatisfy(\.isWhitespace) && !closed {
                quoted = true
                current = ""
            } else if closed {
                guard character.isWhitespace else { return nil }
            } else {
                current.append(character)
            }
        }
        guard !quoted else { return nil }
        fields.append(current)
        return fields.map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// `yyyy-MM-dd'T'HH:mm:ss'Z'` exactly, naming a real day and time.
    package static func instant(_ text: String) -> Date? {
        WireTime.instant(text)
    }

    /// What is wrong with an upload, as `validation error: <message>` says it.
    package struct Problem: Error, Sendable, Equatable {
        package let message: String
        package init(_ message: String) { self.message = message }
    }
}
