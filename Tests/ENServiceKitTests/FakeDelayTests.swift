// The fake-request delay: a wait-free moving average and Poisson samples around it.

import ENServiceKit
import ENTestSupport
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
