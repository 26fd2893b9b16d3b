// Server-rendered pages: mustache templates, German or English text by Accept-Language, no script.

import Foundation
import HTTPTypes
import Hummingbird
import Mustache

/// Renders the templates under `Resources/templates` into HTML responses. Every page is `no-store`: none holds
/// anything a shared or back-button cache should keep, and the result page holds a teleTAN.
struct Pages: Sendable {
    let library: MustacheLibrary

    static func load() async throws -> Pages {
        guard let folder = Bundle.module.url(forResource: "templates", withExtension: nil, subdirectory: "Resources")
        else {
            throw CocoaError(.fileNoSuchFile)
        }
        return Pages(library: try await MustacheLibrary(directory: folder.path))
    }

    enum Language: String, Sendable { case de, en }

    /// German when the browser prefers it, English otherwise.
    static func language(of request: Request) -> Language {
        let accepted = request.headers[.acceptLanguage]?.lowercased() ?? ""
        let first = accepted.split(separator: ",").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        return first.hasPrefix("de") ? .de : .en
    }

    func render(
        _ template: String,
        status: HTTPResponse.Status = .ok,
        language: Language,
        values: [String: Any] = [:]
    ) -> Response {
        let html = self.html(template, language: language, values: values)
        let headers: HTTPFields = [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"]
        return Response(status: status, headers: headers, body: .init(byteBuffer: .init(string: html)))
    }

    /// The page's HTML: the template with the words of `language` and the page's name in its title.
    func html(_ template: String, language: Language, values: [String: Any] = [:]) -> String {
        var context = values
        context["t"] = PageTexts.table(language)
        context["lang"] = language.rawValue
        if let key = Self.titles[template], let name = PageTexts.table(language)[key] { context["page_title"] = name }
        return self.library.render(context, withTemplate: template) ?? "<!doctype html><title>Error</title>"
    }

    /// Each page's name (a text key), before the portal's in the window title; the start page has none.
    static let titles: [String: String] = [
        "login": "login", "totp": "second_factor", "teletan": "teletan", "ratelimit": "teletan",
        "password": "change_password", "circuitbreakers": "cb_title", "localrisk": "lr_title",
        "localriskpreview": "lr_preview_title", "error": "error",
    ]

    /// An instant as an officer reads it: day, month in words, year and minute, in UTC and saying so.
    static func instant(_ date: Date, language: Language) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: language == .de ? "de_DE" : "en_GB")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = language == .de ? "d. MMMM yyyy, HH:mm 'UTC'" : "d MMMM yyyy, HH:mm 'UTC'"
        return formatter.string(from: date)
    }

    /// A friendly error page.
    func error(
        _ status: HTTPResponse.Status,
        _ key: String,
        language: Language,
        values: [String: Any] = [:]
    ) -> Response {
        var context = values
        context["message"] = PageTexts.table(language)[key] ?? key
        context["status"] = status.code
        return self.render("error", status: status, language: language, values: context)
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }
}

/// The pages' words in both languages.
enum PageTexts {
    static func table(_ language: Pages.Language) -> [String: String] {
        language == .de ? self.german : self.english
    }

    static let english: [String: String] = [
        "title": "Corona-Warn-App portal", "error": "Error",
        "login": "Log in", "username": "User name", "password": "Password",
        "login_failed": "Login failed. After 5 failed attempts an account is locked for 15 minutes.",
        "second_factor": "Second factor", "code": "6-digit code from your authenticator app", "confirm": "Confirm",
        "code_failed": "The code was not accepted. Enter the current code; each code works only once.",
        "signed_in_as": "Signed in as", "roles": "Your roles allow",
        "can_test": "TEST teleTANs (a person with a positive PCR test)",
        "can_event": "EVENT teleTANs (warning the guests of an event) for a health authority",
        "no_roles": "Your account has no role that allows issuing teleTANs.",
        "issue_test": "Issue a TEST teleTAN", "issue_event": "Issue an EVENT teleTAN", "authority": "Health authority",
        "choose": "Choose…", "teletan": "teleTAN", "valid_until": "Valid until",
        "teletan_hint":
            "Tell the caller this teleTAN. It is shown only now: the portal keeps no copy, and verification-service "
            + "keeps only a keyed hash (HMAC) of it, so nobody can show it again.",
        "back": "Back to the start page",
        "change_password": "Change password", "current_password": "Current password",
        "new_password": "New password (at least 12 characters)",
        "repeat_password": "Repeat the new password", "save": "Save", "password_changed": "Your password was changed.",
        "password_wrong": "The current password is wrong.",
        "password_locked": "Too many failed attempts: the account is locked for a while. Try again later.",
        "password_mismatch": "The new passwords differ.",
        "password_weak":
            "The new password must have 12 to 128 characters, no control characters, and differ from the user name.",
        "logout": "Log out",
        "rate_limited": "One teleTAN per 30 seconds: please wait", "seconds": "seconds",
        "server_rate_limited": "The system-wide teleTAN limit is reached. Please try again in a moment.",
        "forbidden": "You are not allowed to do this.", "not_found": "This page does not exist.",
        "unavailable": "The verification service cannot be reached. Please try again in a moment.",
        "bad_request": "The request could not be processed. Please go back and try again.",
        "unknown_authority": "Please choose a health authority from the list.",
        "session_expired": "Your session has ended. Please log in again.",
        "can_circuit_breakers": "The NHS circuit breakers of exposure and venue alerts",
        "cb_title": "Circuit breakers", "cb_exposure-notification": "Exposure notifications",
        "cb_venue": "Risky venues",
        "cb_hint":
            "Before a phone alerts its person it asks for approval. yes: approve unless the spike rule holds the request; "
            + "no: refuse every request; pending: hold every request for you. The spike rule holds requests while the "
            + "last hour's exceed the threshold; releasing them quiets the rule for an hour.",
        "cb_switch": "Switch", "cb_pending": "Requests waiting", "cb_pending_rule": "of them held by the spike rule",
        "cb_oldest": "Oldest waiting since", "cb_last_hour": "Requests in the last hour",
        "cb_median": "Median of the same hour, 7 days before", "cb_threshold": "The spike rule holds above",
        "cb_quiet": "Spike rule quiet until", "cb_release": "Release all waiting (yes)",
        "cb_refuse": "Refuse all waiting (no)", "cb_resolved": "Requests answered",
        "can_local_risk": "The NHS lists of risky venues and risky post districts",
        "lr_title": "Risky venues and post districts",
        "lr_hint":
            "Upload the whole list: it replaces the published one. You see every entry checked before you publish; "
            + "a published list reaches the phones' download within a minute.",
        "lr_venues": "Risky venues (CSV)",
        "lr_venues_hint":
            "Header: # venue_id, start_time, end_time, message_type, optional_parameter. Times as "
            + "2026-11-20T18:00:00Z, starting yesterday or before; message type M1 or M2.",
        "lr_post_districts": "Risky post districts (JSON)",
        "lr_post_districts_hint":
            "{\"postDistricts\":{\"M1\":{\"riskIndicator\":\"M\",\"tierIndicator\":\"EN.Tier1\"}},"
            + "\"localAuthorities\":{\"E07000240\":{\"tierIndicator\":\"EN.Tier2\"}}}",
        "lr_preview": "Check and preview", "lr_preview_title": "Preview", "lr_not_a_list": "This upload is not a list",
        "lr_entries": "Entries", "lr_problems": "with problems", "lr_result": "Check", "lr_ok": "valid",
        "lr_publish": "Publish this list", "lr_publish_hint": "Publishing replaces the list phones download.",
        "lr_fix": "Nothing was published. Correct the entries marked and upload the file again.",
        "lr_again": "Upload another file", "lr_published": "Published",
        "lr_risky-venues": "risky venues", "lr_risky-post-districts": "risky post districts",
        "lr_row": "Row", "lr_venue": "Venue id", "lr_from": "From", "lr_until": "Until", "lr_type": "Message type",
        "lr_parameter": "Parameter", "lr_kind": "Area", "lr_code": "Code", "lr_risk": "Risk", "lr_tier": "Tier",
        "lr_invalid": "The list is no longer valid; nothing was published",
        "lr_unavailable": "The distribution service cannot be reached; nothing was published. Please try again soon.",
    ]

    static let german: [String: String] = [
        "title": "Corona-Warn-App-Portal", "error": "Fehler",
        "login": "Anmelden", "username": "Benutzername", "password": "Passwort",
        "login_failed": "Anmeldung fehlgeschlagen. Nach 5 Fehlversuchen wird ein Konto für 15 Minuten gesperrt.",
        "second_factor": "Zweiter Faktor", "code": "6-stelliger Code aus Ihrer Authenticator-App",
        "confirm": "Bestätigen",
        "code_failed": "Der Code wurde nicht akzeptiert. Geben Sie den aktuellen Code ein; jeder Code gilt nur einmal.",
        "signed_in_as": "Angemeldet als", "roles": "Ihre Rollen erlauben",
        "can_test": "TEST-teleTANs (positiver PCR-Test)",
        "can_event": "EVENT-teleTANs (Warnung der Gäste einer Veranstaltung) für ein Gesundheitsamt",
        "no_roles": "Ihr Konto hat keine Rolle, die teleTANs erlaubt.",
        "issue_test": "Eine TEST-teleTAN erzeugen", "issue_event": "Eine EVENT-teleTAN erzeugen",
        "authority": "Gesundheitsamt",
        "choose": "Bitte wählen…", "teletan": "teleTAN", "valid_until": "Gültig bis",
        "teletan_hint":
            "Nennen Sie der anrufenden Person diese teleTAN. Sie wird nur jetzt angezeigt: das Portal behält keine "
            + "Kopie, und der Verifikationsdienst speichert nur einen geheimen Prüfwert (HMAC), daher kann sie niemand "
            + "erneut anzeigen.",
        "back": "Zurück zur Startseite",
        "change_password": "Passwort ändern", "current_password": "Aktuelles Passwort",
        "new_password": "Neues Passwort (mindestens 12 Zeichen)",
        "repeat_password": "Neues Passwort wiederholen", "save": "Speichern",
        "password_changed": "Ihr Passwort wurde geändert.",
        "password_wrong": "Das aktuelle Passwort ist falsch.",
        "password_locked":
            "Zu viele Fehlversuche: das Konto ist vorübergehend gesperrt. Bitte später erneut versuchen.",
        "password_mismatch": "Die neuen Passwörter stimmen nicht überein.",
        "password_weak":
            "Das neue Passwort muss 12 bis 128 Zeichen ohne Steuerzeichen haben und sich vom Benutzernamen unterscheiden.",
        "logout": "Abmelden",
        "rate_limited": "Die Zeitlimitierung für teleTAN-Anfragen ist aktiv, bitte warten Sie", "seconds": "Sekunden",
        "server_rate_limited": "Das systemweite teleTAN-Limit ist erreicht. Bitte warten Sie einen Moment.",
        "forbidden": "Dazu sind Sie nicht berechtigt.", "not_found": "Diese Seite gibt es nicht.",
        "unavailable": "Der Verifikationsdienst ist nicht erreichbar. Bitte versuchen Sie es gleich noch einmal.",
        "bad_request":
            "Die Anfrage konnte nicht verarbeitet werden. Bitte gehen Sie zurück und versuchen Sie es erneut.",
        "unknown_authority": "Bitte wählen Sie ein Gesundheitsamt aus der Liste.",
        "session_expired": "Ihre Sitzung ist beendet. Bitte melden Sie sich erneut an.",
        "can_circuit_breakers": "Die NHS-Sicherungen für Begegnungs- und Ortswarnungen",
        "cb_title": "Sicherungen (Circuit Breaker)", "cb_exposure-notification": "Begegnungswarnungen",
        "cb_venue": "Risiko-Orte",
        "cb_hint":
            "Bevor ein Telefon warnt, fragt es um Freigabe. yes: freigeben, außer die Spitzenregel hält die Anfrage an; "
            + "no: jede Anfrage ablehnen; pending: jede Anfrage für Sie anhalten. Die Spitzenregel hält Anfragen an, "
            + "solange die der letzten Stunde über der Schwelle liegen; eine Freigabe setzt sie eine Stunde aus.",
        "cb_switch": "Schalter", "cb_pending": "Wartende Anfragen", "cb_pending_rule": "davon von der Spitzenregel",
        "cb_oldest": "Älteste wartet seit", "cb_last_hour": "Anfragen der letzten Stunde",
        "cb_median": "Median derselben Stunde der 7 Tage davor", "cb_threshold": "Die Spitzenregel hält an über",
        "cb_quiet": "Spitzenregel ausgesetzt bis", "cb_release": "Alle wartenden freigeben (yes)",
        "cb_refuse": "Alle wartenden ablehnen (no)", "cb_resolved": "Beantwortete Anfragen",
        "can_local_risk": "Die NHS-Listen der Risiko-Orte und Risiko-Postbezirke",
        "lr_title": "Risiko-Orte und Postbezirke",
        "lr_hint":
            "Laden Sie die ganze Liste hoch: sie ersetzt die veröffentlichte. Sie sehen jeden Eintrag geprüft, bevor "
            + "Sie veröffentlichen; eine veröffentlichte Liste erreicht den Download der Telefone binnen einer Minute.",
        "lr_venues": "Risiko-Orte (CSV)",
        "lr_venues_hint":
            "Kopfzeile: # venue_id, start_time, end_time, message_type, optional_parameter. Zeiten wie "
            + "2026-11-20T18:00:00Z, Beginn gestern oder früher; Meldungstyp M1 oder M2.",
        "lr_post_districts": "Risiko-Postbezirke (JSON)",
        "lr_post_districts_hint":
            "{\"postDistricts\":{\"M1\":{\"riskIndicator\":\"M\",\"tierIndicator\":\"EN.Tier1\"}},"
            + "\"localAuthorities\":{\"E07000240\":{\"tierIndicator\":\"EN.Tier2\"}}}",
        "lr_preview": "Prüfen und Vorschau", "lr_preview_title": "Vorschau",
        "lr_not_a_list": "Diese Datei ist keine Liste",
        "lr_entries": "Einträge", "lr_problems": "mit Fehlern", "lr_result": "Prüfung", "lr_ok": "gültig",
        "lr_publish": "Diese Liste veröffentlichen",
        "lr_publish_hint": "Die Veröffentlichung ersetzt die Liste, die Telefone laden.",
        "lr_fix": "Nichts wurde veröffentlicht. Korrigieren Sie die markierten Einträge und laden Sie die Datei neu.",
        "lr_again": "Eine andere Datei hochladen", "lr_published": "Veröffentlicht",
        "lr_risky-venues": "Risiko-Orte", "lr_risky-post-districts": "Risiko-Postbezirke",
        "lr_row": "Zeile", "lr_venue": "Orts-ID", "lr_from": "Von", "lr_until": "Bis", "lr_type": "Meldungstyp",
        "lr_parameter": "Parameter", "lr_kind": "Gebiet", "lr_code": "Code", "lr_risk": "Risiko", "lr_tier": "Stufe",
        "lr_invalid": "Die Liste ist nicht mehr gültig; nichts wurde veröffentlicht",
        "lr_unavailable":
            "Der Verteildienst ist nicht erreichbar; nichts wurde veröffentlicht. Bitte versuchen Sie es gleich erneut.",
    ]
}

extension PageTexts {
    /// A problem of a local-risk list as the officer's page shows it. The parsers speak the reference's English (the
    /// API answers in its words); a German page shows each in German, with the codes and values it names.
    static func problem(_ message: String, language: Pages.Language) -> String {
        guard language == .de else { return message }
        let range = NSRange(message.startIndex..., in: message)
        for (pattern, german) in Self.germanProblems
        where pattern.firstMatch(in: message, range: range) != nil {
            return pattern.stringByReplacingMatches(in: message, range: range, withTemplate: german)
        }
        return message
    }

    /// The area kind of a post-district entry (`NHSRiskyPostDistricts.Entry.Kind`'s raw value) in the page's words.
    static func areaKind(_ kind: String, language: Pages.Language) -> String {
        guard language == .de else { return kind }
        return ["post district": "Postbezirk", "local authority": "Verwaltungsbezirk"][kind] ?? kind
    }

    /// Every message of `NHSRiskyVenueCSV` and `NHSRiskyPostDistricts`, anchored, with its German template.
    private static let germanProblems: [(NSRegularExpression, String)] = [
        (#"No payload"#, "Keine Datei"),
        (#"Content type is not text/csv"#, "Der Inhaltstyp ist nicht text/csv"),
        (#"Csv content is more than 1MB"#, "Die CSV-Datei ist größer als 1 MB"),
        (#"Csv content is not UTF-8"#, "Die CSV-Datei ist nicht in UTF-8 geschrieben"),
        (#"Invalid header\. Expected (.*)"#, "Ungültige Kopfzeile, erwartet: $1"),
        (#"Invalid data in row (\d+)"#, "Ungültige Daten in Zeile $1"),
        (#"VenueId must match (.*)"#, "Die Orts-ID muss $1 entsprechen"),
        (#"Date did not conform to expected format (.*)"#, "Ein Datum hat nicht das Format $1"),
        (#"Start date must be <= end date"#, "Der Beginn muss vor dem Ende liegen"),
        (#"Message Type must match M\[1-2\]"#, "Der Meldungstyp muss M1 oder M2 sein"),
        (#"Message type (\S+) does not support optional parameter"#, "Der Meldungstyp $1 erlaubt keinen Parameter"),
        (#"Duplicate venue id (.*)"#, "Doppelte Orts-ID $1"),
        (#"Start date must be yesterday or before"#, "Der Beginn muss gestern oder früher liegen"),
        (#"payload is more than 1MB"#, "Die Datei ist größer als 1 MB"),
        (#"unable to deserialize payload"#, "Die Datei ist kein JSON mit postDistricts und localAuthorities"),
        (#"Invalid post district - no value"#, "Ungültiger Postbezirk: leer"),
        (#"Invalid post district longer than 20 characters: (.*)"#, "Ungültiger Postbezirk, länger als 20 Zeichen: $1"),
        (
            #"Invalid post district: (.*) is not a UK postcode district such as M1, CF10 or SW1A"#,
            "Ungültiger Postbezirk: $1 ist kein britischer Postbezirk wie M1, CF10 oder SW1A"
        ),
        (#"Invalid risk indicator: (.*) for post district: (.*)"#, "Ungültige Risikostufe $1 für den Postbezirk $2"),
        (#"Invalid tier indicator: (.*) for post district: (.*)"#, "Ungültige Stufe $1 für den Postbezirk $2"),
        (#"Invalid tier indicator: (.*) for local authority: (.*)"#, "Ungültige Stufe $1 für den Verwaltungsbezirk $2"),
        (#"Invalid local authority - no value"#, "Ungültiger Verwaltungsbezirk: leer"),
        (
            #"Invalid local authority: (.*) is not a GSS code of a letter and 8 digits such as E07000240"#,
            "Ungültiger Verwaltungsbezirk: $1 ist kein GSS-Code aus einem Buchstaben und 8 Ziffern wie E07000240"
        ),
    ].compactMap { pattern, german in
        // Constants: the suite translates a message of each, so a pattern that does not compile fails it.
        (try? NSRegularExpression(pattern: "^" + pattern + "$", options: [.dotMatchesLineSeparators])).map {
            ($0, german)
        }
    }
}
