// The fake-request delay: a wait-free moving average and Poisson samples around it.

import ENServiceKit
import ENTestSupport
import Foundation
import Testing

@Suite("Fake delay")
struct FakeDelayTests {
    @Test("fake delays are Poisson samples around the estimate: their mean is close to it")
    func poissonDelays() {
        var generator = SeededGenerator(seed: 5)
        for mean in [5.0, 80.0] {
            let samples = (0..<4000).map { _ in FakeDelay.poisson(mean: mean, using: &generator) }
            let average = Double(samples.reduce(0, +)) / Double(samples.count)
            #expect(abs(average - mean) < mean * 0.05, "mean \(mean): \(average)")
            #expect(samples.allSatisfy { $0 >= 0 })
        }
        #expect(FakeDelay.poisson(mean: 0, using: &generator) == 0)
    }

    @Test("the average moves a samples-th of the way towards each real duration, from the initial estimate")
    func movingAverage() {
        let delay = FakeDelay(initial: .milliseconds(10), samples: 10)
        #expect(delay.average == .milliseconds(10))
        delay.record(.milliseconds(110))
        #expect(delay.average == .milliseconds(20))
        delay.record(.seconds(3600))
        // A stuck request counts as the cap, not as an hour.
        #expect(delay.average == .milliseconds(20) + (FakeDelay.maximum - .milliseconds(20)) / 10)
    }

    @Test("recordings from many tasks at once keep the estimate between the durations recorded")
    func concurrentRecording() async {
        let delay = FakeDelay(initial: .milliseconds(40), samples: 4)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for _ in 0..<2000 { delay.record(task.isMultiple(of: 2) ? .milliseconds(40) : .milliseconds(60)) }
                }
            }
        }
        #expect(delay.average >= .milliseconds(40) && delay.average <= .milliseconds(60))
    }

    @Test("a delay is capped at the maximum however large the estimate")
    func capped() {
        let delay = FakeDelay(initial: .seconds(60), samples: 1)
        var generator = SeededGenerator(seed: 1)
        #expect(delay.delay(using: &generator) == FakeDelay.maximum)
    }
}

@Suite("Fake delay replay")
struct FakeDelayReplayTests {
    @Test(
        "below the threshold dummies wait a Poisson delay around the average; from it on, draws around the recorded durations"
    )
    func replaysRecordedDurations() {
        let delay = FakeDelay(initial: .milliseconds(500), samples: 10)
        var generator = SeededGenerator(seed: 9)
        for index in 0..<(FakeDelay.replayThreshold - 1) { delay.record(.milliseconds(7 + index % 3)) }
        // One recording short: still the average's Poisson delay, far from the 7–9 ms recorded.
        let early = (0..<50).map { _ in delay.delay(using: &generator) }
        #expect(early.contains { $0 > .milliseconds(100) })

        delay.record(.milliseconds(8))
        let replayed = (0..<500).map { _ in delay.delay(using: &generator) }

        #expect(replayed.allSatisfy { $0 > .milliseconds(5) && $0 < .milliseconds(12) }, "\(replayed.max()!)")
        let mean = replayed.reduce(.zero, +) / replayed.count
        #expect(mean > .microseconds(7600) && mean < .microseconds(8400), "\(mean)")
    }

    @Test("a dummy's delay repeats no recorded duration: draws follow the durations' distribution, not their values")
    func smoothedDraws() {
        var generator = SeededGenerator(seed: 21)
        // Real durations of about 8 ms with 10 % spread, as submissions measure.
        let recorded = (0..<FakeDelay.recentCount).map { _ in
            Int(8000 * exp(0.1 * FakeDelay.standardNormal(using: &generator)))
        }
        let delay = FakeDelay(initial: .milliseconds(10), samples: 10)
        for value in recorded { delay.record(.microseconds(value)) }
        let draws = (0..<2000).map { _ in delay.delay(using: &generator) / .microseconds(1) }

        let repeats = draws.filter { value in recorded.contains { abs(Double($0) - value) < 1 } }.count
        #expect(repeats < 20, "\(repeats) of 2000 draws repeat a recorded duration to the microsecond")
        #expect(Set(draws.map { Int($0) }).count > 1500)
        // The draws keep the recorded durations' centre, and their spread widened by the kernel's (in logarithms).
        func moments(_ values: [Double]) -> (mean: Double, deviation: Double) {
            let logs = values.map { log($0) }
            let mean = logs.reduce(0, +) / Double(logs.count)
            return (mean, (logs.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(logs.count - 1)).squareRoot())
        }
        let expected = moments(recorded.map(Double.init))
        let drawn = moments(draws)
        #expect(abs(drawn.mean - expected.mean) < 0.01, "\(drawn) against \(expected)")
        #expect(drawn.deviation > expected.deviation && drawn.deviation < 1.3 * expected.deviation, "\(drawn)")
        // Equal durations leave nothing to smooth: the draw is that duration.
        var same = SeededGenerator(seed: 1)
        #expect(FakeDelay.smoothedDraw(from: [8000, 8000, 8000], using: &same) == 8000)
        #expect(FakeDelay.smoothedDraw(from: [], using: &same) == nil)
    }

    @Test("only the most recent durations are replayed, and none above the maximum")
    func window() {
        let delay = FakeDelay(initial: .milliseconds(10), samples: 10)
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<FakeDelay.recentCount { delay.record(.milliseconds(50)) }
        for _ in 0..<FakeDelay.recentCount { delay.record(.seconds(3600)) }

        let replayed = (0..<200).map { _ in delay.delay(using: &generator) }

        #expect(replayed.allSatisfy { $0 == FakeDelay.maximum })
    }

    @Test("concurrent recordings and delays: every delay is drawn around the durations recorded")
    func concurrent() async {
        let delay = FakeDelay(initial: .milliseconds(10), samples: 10)
        let durations: [Duration] = [.milliseconds(20), .milliseconds(30), .milliseconds(40)]
        for value in durations { for _ in 0..<FakeDelay.replayThreshold { delay.record(value) } }
        let seen = await withTaskGroup(of: [Duration].self) { group in
            for task in 0..<8 {
                group.addTask {
                    var generator = SeededGenerator(seed: UInt64(task))
                    var seen: [Duration] = []
                    for round in 0..<500 {
                        delay.record(durations[(task + round) % 3])
                        seen.append(delay.delay(using: &generator))
                    }
                    return seen
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(seen.count == 4000)
        #expect(seen.allSatisfy { $0 > .milliseconds(10) && $0 < .milliseconds(80) }, "\(seen.min()!)…\(seen.max()!)")
    }
}

@Suite("Fake delay wake-up")
struct FakeDelayWakeUpTests {
    /// Records what it is asked to sleep, and sleeps 2 ms longer (a timer that always wakes up late).
    final class LateSleeper: Sendable {
        let requested = Mutexed<[Duration]>([])

        func sleep(_ duration: Duration) async throws {
            self.requested.withLock { $0.append(duration) }
            try await Task.sleep(for: duration + .milliseconds(2))
        }
    }

    @Test("a dummy's sleep is shortened by how late sleeps wake up, learnt from the sleeps themselves")
    func learnsLateness() async throws {
        let delay = FakeDelay(initial: .milliseconds(10), samples: 10)
        let sleeper = LateSleeper()

        // 50 ms each, so that a busy test machine never delays a wait past its whole delay (it would then not sleep).
        for _ in 0..<20 {
            try await delay.wait(for: .milliseconds(50), since: ContinuousClock.now, sleep: sleeper.sleep)
        }

        let requested = sleeper.requested.value
        #expect(requested.count == 20)
        // Sleeps never end early, so every one was at least 2 ms late and the correction grows towards that.
        #expect(delay.wakeUpLateness >= .milliseconds(1))
        let first = try #require(requested.first)
        let last = try #require(requested.last)
        #expect(last < first - .milliseconds(1))
    }

    @Test("the event-loop sleep dummies use in production never ends before the time asked")
    func eventLoopSleep() async throws {
        for asked in [Duration.milliseconds(1), .milliseconds(7)] {
            let started = ContinuousClock.now
            try await FakeDelay.eventLoopSleep(asked)
            #expect(ContinuousClock.now - started >= asked)
        }
    }

    @Test("the last stretch of a dummy's wait is spent awake: a sleep that returns at once still ends at the delay")
    func awakeUntilTheEnd() async throws {
        let delay = FakeDelay(initial: .milliseconds(10), samples: 10)
        for wanted in [Duration.microseconds(300), FakeDelay.awake / 2, .microseconds(50)] {
            let started = ContinuousClock.now
            try await delay.wait(for: wanted, since: started, sleep: { _ in })
            #expect(ContinuousClock.now - started >= wanted)
        }
    }

    @Test("a sleep that returns at once teaches nothing, and a dummy past its delay does not sleep")
    func noLateness() async throws {
        let delay = FakeDelay(initial: .milliseconds(10), samples: 10)
        let asked = Mutexed<[Duration]>([])

        try await delay.wait(
            for: .milliseconds(5),
            since: ContinuousClock.now,
            sleep: { duration in asked.withLock { $0.append(duration) } }
        )
        try await delay.wait(
            for: .milliseconds(5),
            since: ContinuousClock.now - .seconds(1),
            sleep: { duration in asked.withLock { $0.append(duration) } }
        )

        #expect(asked.value.count == 1)
        #expect(delay.wakeUpLateness == .zero)
    }
}
