// A venue officer's pages for the NHS local-risk lists (nhs §5, §6): upload a file, see every entry checked,
// confirm; the confirmed list is published signed at once, with an audit entry.

import ENCrypto
import ENNHS
import ENServiceKit
import Foundation
import Hummingbird

extension PortalController {
    /// Behind `OfficerRequiredMiddleware`: the two upload forms (role `venue_officer`).
    func localRiskPage(_ request: Request, context: Context) async throws -> Response {
        let language = Pages.language(of: request)
        let caller = try context.officer()
        guard self.localRisk != nil, caller.officer.has(.venueOfficer) else {
            return self.pages.error(.forbidden, "forbidden", language: language)
        }
        var values: [String: Any] = [:]
        if let published = request.uri.queryParameters["published"].map(String.init),
            NHSLocalRisk.List(rawValue: published) != nil
        {
            values["published"] = PageTexts.table(language)["lr_\(published)"] ?? published
        }
        return try await self.officerPage(
            "localrisk",
            request: request,
            session: caller.session,
            officer: caller.officer,
            values: values
        )
    }

    /// Behind `OfficerRequiredMiddleware` and `CSRFRequiredMiddleware`: the uploaded file (multipart field `file`, list
    /// in `list`) checked entry by entry, and the confirmation form when every entry is valid. Nothing is stored:
    /// the confirmation carries the file back (base64url) and it is checked again then.
    func localRiskPreview(_ request: Request, context: Context) async throws -> Response {
        let language = Pages.language(of: request)
        let (session, officer, form) = try context.officer()
        guard let localRisk = self.localRisk, officer.has(.venueOfficer) else {
            return self.pages.error(.forbidden, "forbidden", language: language)
        }
        guard let list = form["list"].flatMap(NHSLocalRisk.List.init(rawValue:)) else {
            return self.pages.error(.badRequest, "bad_request", language: language)
        }
        let bytes = form.bytes("file") ?? []
        let texts = PageTexts.table(language)
        var values: [String: Any] = ["list": list.rawValue, "listName": texts["lr_\(list.rawValue)"] ?? list.rawValue]
        let rows: [[String: Any]]
        let problems: Int
        switch list {
        case .venues:
            values["columns"] = ["lr_row", "lr_venue", "lr_from", "lr_until", "lr_type", "lr_parameter"].map {
                texts[$0] ?? $0
            }
            // The officer chose the CSV form: the browser's guess of the file's type does not matter.
            switch NHSRiskyVenueCSV.rows(bytes, contentType: "text/csv", now: localRisk.clock.now) {
            case .failure(let problem):
                values["uploadProblem"] = PageTexts.problem(problem.message, language: language)
                rows = []
                problems = 1
            case .success(let checked):
                rows = checked.map { row in
                    [
                        "number": row.number, "cells": ["\(row.number)"] + row.fields,
                        "problem": row.problem.map { PageTexts.problem($0, language: language) } ?? false,
                    ]
                }
                problems = checked.count { $0.problem != nil }
            }
        case .postDistricts:
            values["columns"] = ["lr_row", "lr_kind", "lr_code", "lr_risk", "lr_tier"].map { texts[$0] ?? $0 }
            let tiers: Set<String>
            do { tiers = try await localRisk.lists.tiers() } catch {
                return self.pages.error(.serviceUnavailable, "lr_unavailable", language: language)
            }
            switch NHSRiskyPostDistricts.entries(bytes, tiers: tiers) {
            case .failure(let problem):
                values["uploadProblem"] = PageTexts.problem(problem.message, language: language)
                rows = []
                problems = 1
            case .success(let entries):
                rows = entries.enumerated().map { index, entry in
                    let cells = [
                        "\(index + 1)", PageTexts.areaKind(entry.kind.rawValue, language: language), entry.code,
                        entry.indicators.riskIndicator ?? "",
                        entry.indicators.tierIndicator ?? "",
                    ]
                    let problem = entry.problem.map { PageTexts.problem($0, language: language) }
                    return ["number": index + 1, "cells": cells, "problem": problem ?? false]
                }
                problems = entries.count { $0.problem != nil }
            }
        }
        values["rows"] = rows
        values["count"] = rows.count
        values["problems"] = problems
        values["publishable"] = problems == 0
        if problems == 0 { values["content"] = Base64URL.encode(bytes) }
        return try await self.officerPage(
            "localriskpreview",
            status: problems == 0 ? .ok : .unprocessableContent,
            request: request,
            session: session,
            officer: officer,
            values: values
        )
    }

    /// Behind `OfficerRequiredMiddleware` and `CSRFRequiredMiddleware`: checks the previewed file again and has
    /// distribution-service publish it; audits and goes back to the upload page, which says it was published.
    func localRiskPublish(_ request: Request, context: Context) async throws -> Response {
        let language = Pages.language(of: request)
        let (_, officer, form) = try context.officer()
        guard let localRisk = self.localRisk, officer.has(.venueOfficer) else {
            return self.pages.error(.forbidden, "forbidden", language: language)
        }
        guard let list = form["list"].flatMap(NHSLocalRisk.List.init(rawValue:)),
            let content = form["content"].flatMap(Base64URL.decode)
        else { return self.pages.error(.badRequest, "bad_request", language: language) }
        switch await localRisk.publish(list, content, contentType: "text/csv", logger: context.logger) {
        case .invalid(let message):
            return self.pages.error(
                .unprocessableContent,
                "lr_invalid",
                language: language,
                values: ["detail": message]
            )
        case .unavailable:
            return self.pages.error(.serviceUnavailable, "lr_unavailable", language: language)
        case .published(let details):
            try await self.engine.audit(officer.username, list.auditAction, "\(details) source=portal")
            return Pages.redirect("/local-risk?published=\(list.rawValue)")
        }
    }
}
