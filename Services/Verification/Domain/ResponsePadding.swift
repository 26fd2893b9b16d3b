// Filler that makes real and fake answers equally long (cwa-satellites §1.5).

/// Random alphanumeric filler for `responsePadding`.
enum ResponsePadding {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    static func random(count: Int, using generator: inout some RandomNumberGenerator) -> String {
        String(decoding: (0..<count).map { _ in self.alphabet.randomElement(using: &generator)! }, as: UTF8.self)
    }

    static func random(count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return self.random(count: count, using: &generator)
    }
}
