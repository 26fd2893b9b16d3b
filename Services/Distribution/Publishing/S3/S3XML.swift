// The little XML reading S3 answers need: element texts by name, entities unescaped (no XML parser on Linux here).

/// Reads the flat elements of S3's XML answers (`ListBucketResult`, `Error`) by scanning for their tags.
enum S3XML {
    /// The text of every `<name>…</name>` element, in document order, with entities unescaped. Elements with
    /// attributes and self-closing ones are not matched; S3 writes neither for the elements read here.
    static func texts(of name: String, in xml: String) -> [String] {
        let open = Array("<\(name)>".utf8)
        let close = Array("</\(name)>".utf8)
        let bytes = Array(xml.utf8)
        var texts: [String] = []
        var position = 0
        while let start = self.firstIndex(of: open, in: bytes, from: position) {
            let contentStart = start + open.count
            guard let end = self.firstIndex(of: close, in: bytes, from: contentStart) else { break }
            texts.append(self.unescaped(String(decoding: bytes[contentStart..<end], as: UTF8.self)))
            position = end + close.count
        }
        return texts
    }

    /// The text of the first `<name>` element, if any.
    static func text(of name: String, in xml: String) -> String? {
        self.texts(of: name, in: xml).first
    }

    /// The text with the five predefined entities (`&lt;` `&gt;` `&amp;` `&quot;` `&apos;`) and numeric character
    /// references (`&#13;`, `&#x1F;`) replaced; anything else after `&` is kept as it is.
    static func unescaped(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var out = ""
        var rest = Substring(text)
        while let ampersand = rest.firstIndex(of: "&") {
            out += rest[..<ampersand]
            let afterAmpersand = rest.index(after: ampersand)
            if let semicolon = rest[afterAmpersand...].prefix(12).firstIndex(of: ";"),
                let replacement = self.replacement(for: rest[afterAmpersand..<semicolon])
            {
                out += replacement
                rest = rest[rest.index(after: semicolon)...]
            } else {
                out += "&"
                rest = rest[afterAmpersand...]
            }
        }
        out += rest
        return out
    }

    private static func replacement(for entity: Substring) -> String? {
        switch entity {
        case "lt": return "<"
        case "gt": return ">"
        case "amp": return "&"
        case "quot": return "\""
        case "apos": return "'"
        default: break
        }
        guard entity.hasPrefix("#") else { return nil }
        let number = entity.dropFirst()
        let value: UInt32?
        if number.hasPrefix("x") || number.hasPrefix("X") {
            value = UInt32(number.dropFirst(), radix: 16)
        } else {
            value = UInt32(number, radix: 10)
        }
        return value.flatMap { Unicode.Scalar($0) }.map { String(Character($0)) }
    }

    /// Where `pattern` first occurs in `bytes` at or after `start`.
    private static func firstIndex(of pattern: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard !pattern.isEmpty, bytes.count >= pattern.count, start <= bytes.count - pattern.count else { return nil }
        var index = start
        while index <= bytes.count - pattern.count {
            if bytes[index] == pattern[0] && bytes[index..<(index + pattern.count)].elementsEqual(pattern) {
                return index
            }
            index += 1
        }
        return nil
    }
}
