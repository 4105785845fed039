import Testing
import WorkbookTesting

@testable import Channels

extension BuildAChannelTests.OneAtATime {
  @Test(
    "close() from another thread in the middle of the traffic: every send that returned is received once, in order",
    arguments: [0, 3])
  func closeFromAnotherThread(capacity: Int) async throws {
    // If it stops early (a deadline passed), the tests after it would only hang too.
    var completed = false
    defer { if !completed { aCallNeverReturned.withLock { $0 = true } } }
    // An earlier test already found a call that never returns; this one would hang too.
    if aCallNeverReturned.value { return }
    let producers = 4
    let consumers = 3
    let perProducer = 100
    var problems: [String] = []

    for round in 1...12 {
      let channel = Channel<Int>(capacity: capacity)
      let delivered = Locked<[Int]>([])
      let refusals = Locked<[String]>([])

      let received = try await withDeadline(
        .seconds(5), "round \(round): \(producers) producers, \(consumers) consumers, a close()",
        hint: "close() must resume everyone who waits: receivers with nil once the buffer is "
          + "empty, senders by throwing ChannelClosedError"
      ) {
        let sending = (0..<producers).map { producer in
          Task {
            for index in 0..<perProducer {
              do {
                try await channel.send(producer * 10_000 + index)
                delivered.withLock { $0.append(producer * 10_000 + index) }
              } catch {
                if !(error is ChannelClosedError) {
                  refusals.withLock { $0.append("send threw \(error), not ChannelClosedError") }
                }
                return
              }
            }
          }
        }
        let receiving = (0..<consumers).map { _ in
          Task {
            var received: [Int] = []
            for try await element in channel { received.append(element) }
            return received
          }
        }
        // Somewhere in the traffic, a callback on another thread closes the channel.
        onRandomThread(within: .milliseconds(2)) { channel.close() }

        for task in sending { await task.value }
        var received: [[Int]] = []
        for task in receiving {
          switch await task.result {
          case .success(let elements): received.append(elements)
          case .failure(let error):
            refusals.withLock { $0.append("a receiving loop threw \(error)") }
          }
        }
        return received
      }

      let everything = received.flatMap { $0 }
      let sent = delivered.value
      problems += refusals.value.prefix(2).map { "round \(round): \($0)" }
      if everything.sorted() != sent.sorted() {
        problems.append(
          "round \(round): \(sentAndReceived(sent, everything))")
      }
      for (consumer, elements) in received.enumerated() {
        for producer in 0..<producers
        where !isIncreasing(elements.filter { $0 / 10_000 == producer }) {
          problems.append(
            "round \(round): consumer \(consumer) got producer \(producer)'s elements out of order")
        }
      }
      if problems.count >= 3 { break }
    }

    #expect(
      problems.isEmpty,
      """
      with close() called at any moment from another thread, every send that returned must be \
      received exactly once (close() must not drop buffered elements), no send that threw may be, senders must throw \
      ChannelClosedError, and each producer's elements keep their order: \
      \(problems.prefix(3).joined(separator: "; "))
      """)
    completed = true
  }

  @Test(
    "Senders and receivers woken and cancelled from other threads: nothing lost or duplicated",
    arguments: [0, 2])
  func cancelFromOtherThreads(capacity: Int) async throws {
    // If it stops early (a deadline passed), the tests after it would only hang too.
    var completed = false
    defer { if !completed { aCallNeverReturned.withLock { $0 = true } } }
    // An earlier test already found a call that never returns; this one would hang too.
    if aCallNeverReturned.value { return }
    guard try await resumesOutsideTheLock() else { return }
    var problems: [String] = []

    for round in 1...12 {
      let channel = Channel<Int>(capacity: capacity)
      let delivered = Locked<[Int]>([])
      let consumed = Locked<[Int]>([])

      try await withDeadline(
        .seconds(5), "round \(round) with cancellations from other threads",
        hint: "a cancelled send or receive was never resumed, or a waiter was left in a queue"
      ) {
        let sending = (0..<4).map { producer in
          Task {
            for index in 0..<100 {
              do {
                try await channel.send(producer * 10_000 + index)
                delivered.withLock { $0.append(producer * 10_000 + index) }
              } catch {
                return
              }
            }
          }
        }
        let receiving = (0..<4).map { _ in
          Task {
            for try await element in channel { consumed.withLock { $0.append(element) } }
          }
        }
        // Producers 1 and 3 and consumers 2 and 3 are cancelled by callbacks on other
        // threads, at random moments; consumers 0 and 1 drain the channel.
        let cancellations: [@Sendable () -> Void] = [
          sending[1].cancel, sending[3].cancel, receiving[2].cancel, receiving[3].cancel,
        ]
        for cancel in cancellations { onRandomThread(within: .milliseconds(1), cancel) }
        for task in sending { await task.value }
        channel.close()
        for task in receiving { _ = await task.result }
      }

      let received = consumed.value
      let sent = delivered.value
      if received.sorted() != sent.sorted() {
        problems.append(
          "round \(round): \(sentAndReceived(sent, received))")
      }
      // Producers 0 and 2 are never cancelled, and the channel is closed after every
      // producer has stopped: all their elements get in.
      let uncancelled = sent.filter { $0 / 10_000 == 0 || $0 / 10_000 == 2 }.count
      if uncancelled != 200 {
        problems.append(
          "round \(round): the producers nobody cancelled got \(uncancelled) of 200 elements in")
      }
      if Set(received).count != received.count {
        problems.append("round \(round): an element was received twice")
      }
      if problems.count >= 3 { break }
    }

    #expect(
      problems.isEmpty,
      """
      a send that returned must be received exactly once, whoever is cancelled from whichever \
      thread: \(problems.prefix(3).joined(separator: "; "))
      """)
    completed = true
  }
}

extension BuildAChannelTests.OneAtATime {
  @Test(
    "Two receivers that arrive at the same instant are told apart: cancelling one leaves the other")
  func receiversArrivingTogether() async throws {
    // If it stops early (a deadline passed), the tests after it would only hang too.
    var completed = false
    defer { if !completed { aCallNeverReturned.withLock { $0 = true } } }
    // An earlier test already found a call that never returns; this one would hang too.
    if aCallNeverReturned.value { return }
    // Two threads of our own, released together: the two receive() calls start within a
    // few hundred nanoseconds of each other in a good share of the rounds.
    let threads = [OneThreadExecutor(), OneThreadExecutor()]
    let rounds = stressAmount(grading: 400, verify: 2_500)
    var problems: [String] = []

    try await withOneStressAtATime {
      for round in 1...rounds {
        let channel = Channel<Int>(capacity: 0)
        let line = StartLine(parties: 2)
        let ended = [Locked(false), Locked(false)]
        let receivers = (0..<2).map { index in
          Task(executorPreference: threads[index]) { () async throws -> Int? in
            defer { ended[index].withLock { $0 = true } }
            line.go(jitter: 0...200)
            return try await channel.receive()
          }
        }
        // Queued behind each receiver's first step: once both have run, both wait.
        let waiting = Countdown(2)
        for thread in threads { thread.schedule { waiting.arrive() } }
        try await withDeadline(
          .seconds(2), "round \(round): two receive() calls to start waiting",
          hint: "receive() on an empty channel must suspend, not block its thread",
          checksPool: false
        ) {
          await waiting.reached()
        }

        // The cancelled one leaves; the other goes on waiting for an element.
        let cancelled = round % 2
        receivers[cancelled].cancel()
        // Most rounds end at once; the rest get a second.
        var left = false
        for _ in 0..<100 where !left {
          await Task.yield()
          left = ended[cancelled].value
        }
        if !left { left = await eventually(within: .seconds(1)) { ended[cancelled].value } }
        let otherEnded = ended[1 - cancelled].value
        channel.close()
        try await withDeadline(
          .seconds(2), "round \(round): the receivers after close()",
          hint: "close() must end every waiting receiver with nil", checksPool: false
        ) {
          for receiver in receivers { _ = await receiver.result }
        }
        if otherEnded {
          problems.append(
            "round \(round): the receiver nobody cancelled ended when the other was cancelled"
              + (left ? "" : ", and the cancelled one went on waiting"))
          break
        }
        if !left {
          problems.append("round \(round): the cancelled receiver went on waiting")
          break
        }
      }
    }

    #expect(
      problems.isEmpty,
      """
      two receivers that began waiting at the same instant, on two threads, could not be told \
      apart: \(problems.joined(separator: "; ")). Whatever names a waiter so that its \
      cancellation finds it must be unique even when two callers take one at the same \
      moment; a read followed by a separate write lets both read the same value
      """)
    completed = true
  }
}
