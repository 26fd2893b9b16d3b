// `cwa drill races`: how one race's answers are gathered and judged.

import Synchronization
import Testing

@testable import CWATool

@Suite("cwa drill races")
struct RaceTests {
    /// Answers the calls in order from `script`, then `rest` for every call after it.
    final class Script: Sendable {
        let answers: Mutex<[Int]>
        let rest: Int
        init(_ script: [Int], rest: Int) {
            self.answers = Mutex(script)
            self.rest = rest
        }
        func next() -> Reply {
            let status = self.answers.withLock { $0.isEmpty ? self.rest : $0.removeFirst() }
            // A second's wait: every first call is made before any retry, so each 503 goes to a call of its own.
            let headers: [(name: String, value: String)] = status == 503 ? [("Retry-After", "1")] : []
            return Reply(status: status, headers: headers, body: [], seconds: 0)
        }
    }

    @Test("a 503 is tried again and its next answer counts")
    func retriesServiceUnavailable() async {
        let script = Script([503, 503], rest: 400)
        let race = await DrillCommand.Races.race(3) { script.next() }
        #expect(race.replies.map(\.status) == [400, 400, 400])
        #expect(race.retried == 2)
    }

    @Test("a call still answered 503 after its retries ends with that 503, and fails the race")
    func retriesAreBounded() async {
        let script = Script([], rest: 503)
        let race = await DrillCommand.Races.race(2, retries: 2) { script.next() }
        #expect(race.replies.map(\.status) == [503, 503])
        #expect(race.retried == 2)
        #expect(!RaceOutcome(race.replies.map(\.status)).isOneWinner(success: 201, refusals: [400]))
    }

    @Test("other answers are not tried again; a call without an answer counts as status 0")
    func otherAnswersAreFinal() async {
        let script = Script([201, 500], rest: 400)
        let race = await DrillCommand.Races.race(4) { script.next() }
        #expect(race.retried == 0)
        let outcome = RaceOutcome(race.replies.map(\.status))
        #expect(outcome.statuses == [201: 1, 500: 1, 400: 2])
        #expect(!outcome.isOneWinner(success: 201, refusals: [400]))

        struct Refused: Error {}
        let unanswered = await DrillCommand.Races.race(2) { throw Refused() }
        #expect(RaceOutcome(unanswered.replies.map(\.status)).statuses == [0: 2])
        #expect(RaceOutcome([201, 400, 400]).isOneWinner(success: 201, refusals: [400]))
    }
}
