// The pages' words: each page named in its window title, instants written as an officer reads them.

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

}
