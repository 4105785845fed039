import Dispatch
import Testing
import WorkbookTesting

@testable import Channels

/// Sends `sender`'s elements `index..<end` in bursts of ten, each burst a callback on a
/// random thread that schedules the next, so one sender's elements go in in order.
private func sendInBursts(
  to channel: NonBlockingChannel<Int>, as sender: Int, from index: Int, upTo end: Int,
  refused: Locked<Int>, sent: Countdown
) {
  let burstEnd = min(index + 10, end)
  for element in index..<burstEnd where !channel.send(sender * 10_000 + element) {
    refused.withLock { $0 += 1 }
  }
  guard burstEnd < end else { return sent.arrive() }
  onRandomThread(within: .microseconds(50)) {
    sendInBursts(to: channel, as: sender, from: burstEnd, upTo: end, refused: refused, sent: sent)
  }
}

extension BufferKindsTests {
  @Test(
    "Sends from callbacks on random threads while receivers are cancelled from others: each element at most once, in order",
    arguments: [BufferKind.unlimited, .conflated])
  func sendsFromPlainThreads(kind: BufferKind) async throws {
    // If send(_:) resumed under the lock that onCancel takes, this test could deadlock the
    // runtime's threads for good; the probe reports that safely instead.
    guard try await cancelWhileSending(kind: kind, round: 0) else { return }
    let senders = 4
    let perSender = 200
    var problems: [String] = []

    for round in 1...8 {
      let channel = NonBlockingChannel<Int>(kind)
      let refused = Locked(0)
      let sent = Countdown(senders)
      // send(_:) never waits, so legacy callbacks on any thread may call it directly.
      for sender in 0..<senders {
        sendInBursts(
          to: channel, as: sender, from: 0, upTo: perSender, refused: refused, sent: sent)
      }
      let receiving = (0..<5).map { _ in
        Task {
          var received: [Int] = []
          do {
            for try await element in channel { received.append(element) }
          } catch {
            // Cancelled: what it received before still counts.
          }
          return received
        }
      }
      // Two receivers are cancelled by callbacks on other threads at random moments.
      for victim in [receiving[3], receiving[4]] {
        onRandomThread(within: .milliseconds(1)) { victim.cancel() }
      }

      let received = try await withDeadline(
        .seconds(5), "round \(round): \(senders) senders on random threads and 5 receivers",
        hint: "a receiver was never resumed; send(_:) must hand an element to a waiting receiver"
      ) {
        await sent.reached()
        channel.close()
        var received: [[Int]] = []
        for task in receiving { received.append(await task.value) }
        return received
      }

      let everything = received.flatMap { $0 }
      if refused.value > 0 {
        problems.append("round \(round): an open channel refused \(refused.value) sends")
      }
      if Set(everything).count != everything.count {
        problems.append("round \(round): an element was received twice")
      }
      if kind == .unlimited, everything.count != senders * perSender {
        problems.append(
          "round \(round): \(senders * perSender) sent, \(everything.count) received; an "
            + "unlimited channel loses nothing, even when a waiting receiver is cancelled")
      }
      if kind == .conflated, everything.isEmpty {
        problems.append("round \(round): nothing was received")
      }
      for (receiver, elements) in received.enumerated() {
        for sender in 0..<senders where !isIncreasing(elements.filter { $0 / 10_000 == sender }) {
          problems.append(
            "round \(round): receiver \(receiver) got sender \(sender)'s elements out of order")
        }
      }
      if problems.count >= 3 { break }
    }

    #expect(
      problems.isEmpty,
      """
      sends from many threads at once, with receivers cancelled at any moment: \
      \(problems.prefix(3).joined(separator: "; "))
      """)
  }
}
