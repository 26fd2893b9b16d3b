// The pages' words: each page named in its window title, instants written as an officer reads them.

import ENNHS
import Foundation
import Testing

@testable import PortalService

@Suite("Portal pages")
struct PortalPagesTests {
    @Test("an instant: day, month in words, year, minute and UTC, in English and German")
    func instant() {
        let date = Date(timeIntervalSince1970: 1_796_393_100)  // 2026-12-04T14:05:00Z
        #expect(Pages.instant(date, language: .en) == "4 December 2026, 14:05 UTC")
        #expect(Pages.instant(date, language: .de) == "4. Dezember 2026, 14:05 UTC")
    }

    @Test("every page but the start page is named before the portal in its title, in the page's language")
    func titles() async throws {
        let pages = try await Pages.load()
        for language in [Pages.Language.en, .de] {
            let texts = PageTexts.table(language)
            let site = try #require(texts["title"])
            for (template, key) in Pages.titles {
                let name = try #require(texts[key], "\(template): no text \(key)")
                let html = pages.html(template, language: language)
                #expect(html.contains("<title>\(name) · \(site)</title>"), "\(template) (\(language))")
            }
            let start = pages.html("start", language: language)
            #expect(start.contains("<title>\(site)</title>"))
        }
        #expect(PageTexts.english["title"] == "Corona-Warn-App portal")
    }

    /// Every message the two parsers give, each made by a list that has that problem.
    static func problems() -> [String] {
        let now = Date(timeIntervalSince1970: 1_796_393_100)
        let header = "# venue_id, start_time, end_time, message_type, optional_parameter\n"
        let day = "2026-11-01T10:00:00Z, 2026-11-01T14:00:00Z"
        var messages: [String] = []
        for (text, type) in [
            ("", "text/csv"), (header, "application/json"), ("x\n", "text/csv"),
            (header + String(repeating: "x", count: NHSRiskyVenueCSV.maxBytes), "text/csv"),
        ] {
            if case .failure(let problem) = NHSRiskyVenueCSV.rows(Array(text.utf8), contentType: type, now: now) {
                messages.append(problem.message)
            }
        }
        if case .failure(let problem) = NHSRiskyVenueCSV.rows(
            Array(header.utf8) + [0xFF],
            contentType: "text/csv",
            now: now
        ) {
            messages.append(problem.message)
        }
        let rows = [
            "AB1, \(day), M1,", "CD2, 2026-11-01, 2026-11-02T10:00:00Z, M1,",
            "CD3, 2026-11-01T14:00:00Z, 2026-11-01T10:00:00Z, M1,", "CD4, \(day), M3,", "CD5, \(day), M1, x",
            "CD6, \(day), M1,", "CD6, \(day), M2,", "CD7, 2026-12-04T10:00:00Z, 2026-12-04T11:00:00Z, M1,", "\"CD8",
        ]
        let checked = NHSRiskyVenueCSV.rows(
            Array((header + rows.joined(separator: "\n")).utf8),
            contentType: "text/csv",
            now: now
        )
        messages += ((try? checked.get()) ?? []).compactMap(\.problem)
        let districts = """
            {"postDistricts":{" ":{"riskIndicator":"H"},"AAAAAAAAAAAAAAAAAAAAA1":{"riskIndicator":"H"},\
            "=cmd":{"riskIndicator":"H"},"M1":{"riskIndicator":"X"},"M2":{"riskIndicator":"H","tierIndicator":"no"}},\
            "localAuthorities":{" ":{},"E1":{},"E07000240":{"tierIndicator":"no"}}}
            """
        let entries = NHSRiskyPostDistricts.entries(Array(districts.utf8), tiers: ["EN.Tier1"])
        messages += ((try? entries.get()) ?? []).compactMap(\.problem)
        for bytes in [Array("[]".utf8), Array(repeating: UInt8(ascii: " "), count: NHSRiskyPostDistricts.maxBytes + 1)]
        {
            if case .failure(let problem) = NHSRiskyPostDistricts.entries(bytes, tiers: nil) {
                messages.append(problem.message)
            }
        }
        return messages
    }

    @Test("a German page shows every problem of a list in German, with the values it names; English as it came")
    func germanProblems() {
        let messages = Self.problems()
        #expect(messages.count == 23, "\(messages)")
        for message in messages {
            #expect(PageTexts.problem(message, language: .en) == message)
            let german = PageTexts.problem(message, language: .de)
            #expect(german != message, "no German for \(message)")
        }
        let named = PageTexts.problem("Invalid risk indicator: X for post district: M1", language: .de)
        #expect(named == "Ungültige Risikostufe X für den Postbezirk M1")
        #expect(PageTexts.areaKind("local authority", language: .de) == "Verwaltungsbezirk")
    }
}
