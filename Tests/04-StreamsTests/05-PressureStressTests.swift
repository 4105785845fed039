import LegacyKit
import Testing
import WorkbookTesting

@testable import Streams

/// How a stress round ends its loop over the samples.
private enum Ending: CaseIterable {
  /// Reads every sample, to the hub's completion.
  case readsToTheEnd
  /// Breaks out of the loop after a few samples.
  case breaks
  /// Is cancelled by a callback on another thread, at a random moment.
  case isCancelled
}

extension PressureTests {
  @Test(
    "Sessions read slowly and ended every way at random moments: in order, nothing lost unreported, the hub stopped"
  )
  func sessionsEndedAtRandom() async throws {
    var problems: [String] = []
    /// What the problems mean, each said once.
    var causes: [String] = []
    func blame(_ cause: String) {
      if !causes.contains(cause) { causes.append(cause) }
    }

    for round in 1...40 {
      let capacity = Int.random(in: 1...6)
      let ending = Ending.allCases.randomElement()!
      let breakAfter = Int.random(in: 1...20)
      // A short session to read to the end; one of ten seconds to break off, so that only a
      // .closed receipt can stop the hub in time.
      let samplesInSession = ending == .readsToTheEnd ? 60 : 100_000
      let interval: Duration =
        ending == .readsToTheEnd
        ? [.zero, .microseconds(100)].randomElement()! : .microseconds(100)
      let hub = TelemetryHub(sampleCount: samplesInSession, interval: interval, script: .default)
      // The stream is made inside the loop and held by nothing else, as in an app: breaking
      // out of the loop releases it, and that ends it.
      let progress = Locked<[Int]>([])
      let consumer = Task {
        var seen: [Int] = []
        for await sample in samples(from: hub, keepingNewest: capacity) {
          seen.append(sample.number)
          progress.withLock { $0.append(sample.number) }
          if ending == .breaks, seen.count == breakAfter { break }
          // A slow reader, so the buffer fills and drops.
          if Bool.random() { try? await Task.sleep(for: .microseconds(Int.random(in: 0...200))) }
        }
        return seen
      }
      if ending == .isCancelled {
        onRandomThread(within: .milliseconds(2)) { consumer.cancel() }
      }
      let seen = try await withDeadline(
        .seconds(2), "the loop over samples(from:keepingNewest:), round \(round)",
        diagnosis: { diagnosis(of: hub, received: progress.value) }
      ) {
        await consumer.value
      }

      if !isIncreasing(seen) {
        problems.append("round \(round): samples out of order: \(seen.prefix(10))…")
      }
      switch ending {
      case .readsToTheEnd:
        let lost = hub.lostSamples.map(\.number)
        let both = Set(seen).intersection(lost)
        if !both.isEmpty {
          problems.append(
            "round \(round): \(both.count) samples were received and also reported lost")
          blame(evictedHint)
        } else if lost.isEmpty, seen.count < samplesInSession {
          problems.append(
            "round \(round): \(samplesInSession - seen.count) samples were lost, and no receipt "
              + "said so")
          blame(droppedHint)
        } else if (seen + lost).sorted() != Array(1...samplesInSession) {
          problems.append(
            "round \(round): \(seen.count) received and \(lost.count) reported lost, not each "
              + "of the \(samplesInSession) exactly once")
        }
      case .breaks, .isCancelled:
        // Stopped: it either completed its session, or stopped at a .closed receipt.
        let stopped = await eventually {
          hub.hasFinished || (!hub.isMeasuring && hub.receipts.last == .closed)
        }
        let how = ending == .breaks ? "broke" : "was cancelled"
        if stopped {
          break
        } else if hub.handedOverCount == 0 {
          problems.append("round \(round): the hub never started")
        } else if hub.isMeasuring {
          problems.append(
            "round \(round): the hub still measures after the loop \(how)")
          blame(closeHint)
        } else {
          problems.append(
            "round \(round): the hub stopped after the loop \(how), but not at a .closed receipt")
        }
      }
      if problems.count >= 3 { break }
    }

    #expect(
      problems.isEmpty,
      """
      each sample is received in order or reported lost, and a stream that ends early stops \
      the hub with .closed: \(problems.prefix(3).joined(separator: "; ")). \
      \(causes.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined(separator: ". "))
      """)
  }
}

/// True if `numbers` only go up.
private func isIncreasing(_ numbers: [Int]) -> Bool {
  zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }
}
