// Channel throughput: the solution's `Channel` (Chapter 6, exercise 6.2) against
// swift-async-algorithms' `AsyncChannel` and the standard library's `AsyncStream`, moving
// the same number of `Int`s in each configuration. Every run checks that each message
// arrived exactly once (by count and by sum), so a fast but lossy run can never count.

import AsyncAlgorithms

/// One way of moving `count` Ints from producers to consumers; returns how many arrived and
/// their sum.
typealias Transfer = @Sendable (_ count: Int) async throws -> (received: Int, sum: Int)

/// The solution's channel: `producers` tasks send, `consumers` tasks receive. A `capacity`
/// of nil means room for every message of the run, that is, unbounded.
func solutionTransfer(capacity: Int?, producers: Int, consumers: Int) -> Transfer {
  { count in
    let channel = Channel<Int>(capacity: capacity ?? count)
    return try await withThrowingTaskGroup(of: (Int, Int).self) { group in
      for _ in 0..<consumers {
        group.addTask {
          var received = 0
          var sum = 0
          while let value = try await channel.receive() {
            received += 1
            sum &+= value
          }
          return (received, sum)
        }
      }
      try await withThrowingTaskGroup(of: Void.self) { senders in
        for producer in 0..<producers {
          senders.addTask {
            for value in share(of: count, producer: producer, producers: producers) {
              try await channel.send(value)
            }
          }
        }
        try await senders.waitForAll()
      }
      channel.close()
      return try await group.reduce(into: (0, 0)) { total, part in
        total.0 += part.0
        total.1 &+= part.1
      }
    }
  }
}

/// How `AsyncChannel`'s consumers read it.
enum AsyncChannelReading: Sendable {
  /// Straight from the channel: a rendezvous.
  case direct
  /// Through `.buffer(policy: .bounded(n))` (a task pulls ahead into a buffer of n).
  case bounded(Int)
  /// Through `.buffer(policy: .unbounded)`.
  case unbounded
}

/// swift-async-algorithms' channel: `producers` tasks send, `consumers` tasks iterate.
func asyncChannelTransfer(
  reading: AsyncChannelReading, producers: Int, consumers: Int
)
  -> Transfer
{
  { count in
    let channel = AsyncChannel<Int>()
    return try await withThrowingTaskGroup(of: (Int, Int).self) { group in
      for _ in 0..<consumers {
        group.addTask {
          var received = 0
          var sum = 0
          switch reading {
          case .direct:
            for await value in channel {
              received += 1
              sum &+= value
            }
          case .bounded(let limit):
            for await value in channel.buffer(policy: .bounded(limit)) {
              received += 1
              sum &+= value
            }
          case .unbounded:
            for await value in channel.buffer(policy: .unbounded) {
              received += 1
              sum &+= value
            }
          }
          return (received, sum)
        }
      }
      await withTaskGroup(of: Void.self) { senders in
        for producer in 0..<producers {
          senders.addTask {
            for value in share(of: count, producer: producer, producers: producers) {
              await channel.send(value)
            }
          }
        }
        await senders.waitForAll()
      }
      channel.finish()
      return try await group.reduce(into: (0, 0)) { total, part in
        total.0 += part.0
        total.1 &+= part.1
      }
    }
  }
}

/// The standard library's stream, unbounded: one producer yields, one consumer iterates.
func asyncStreamTransfer() -> Transfer {
  { count in
    let (stream, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .unbounded)
    let consumer = Task {
      var received = 0
      var sum = 0
      for await value in stream {
        received += 1
        sum &+= value
      }
      return (received, sum)
    }
    let producer = Task {
      for value in 0..<count {
        continuation.yield(value)
      }
      continuation.finish()
    }
    await producer.value
    return await consumer.value
  }
}

/// The values producer number `producer` of `producers` sends: together, 0..<count once.
func share(of count: Int, producer: Int, producers: Int) -> StrideTo<Int> {
  stride(from: producer, to: count, by: producers)
}

struct ChannelVariant {
  var name: String
  /// Nil when the variant cannot do the configuration; then the footnote says why.
  var transfer: Transfer?
  var notApplicable: Footnote?
}

struct ChannelConfiguration {
  var name: String
  var variants: [ChannelVariant]
}

let noRendezvousStream = Footnote(
  marker: "[a]",
  text:
    "AsyncStream has no rendezvous and no back-pressure: `yield` never waits for the consumer. "
    + "Its only lossless mode is unbounded, measured in the unbounded row.")
let noBoundedStream = Footnote(
  marker: "[b]",
  text:
    "AsyncStream cannot hold a producer back: `.bufferingOldest(100)` and `.bufferingNewest(100)` "
    + "drop elements once 100 are waiting instead of making the producer wait, so a count of "
    + "1,000,000 received would not hold.")
let singleConsumerStream = Footnote(
  marker: "[c]",
  text:
    "AsyncStream allows one consumer only (a second iterator stops the program), so it cannot "
    + "do 4 × 4.")

func channelConfigurations() -> [ChannelConfiguration] {
  let solution = "Channel (solution)"
  return [
    ChannelConfiguration(
      name: "1 producer × 1 consumer, rendezvous",
      variants: [
        ChannelVariant(
          name: solution,
          transfer: solutionTransfer(capacity: 0, producers: 1, consumers: 1)),
        ChannelVariant(
          name: "AsyncChannel",
          transfer: asyncChannelTransfer(reading: .direct, producers: 1, consumers: 1)),
        ChannelVariant(name: "AsyncStream", notApplicable: noRendezvousStream),
      ]),
    ChannelConfiguration(
      name: "1 producer × 1 consumer, buffered(100)",
      variants: [
        ChannelVariant(
          name: "\(solution), capacity 100",
          transfer: solutionTransfer(capacity: 100, producers: 1, consumers: 1)),
        ChannelVariant(
          name: "AsyncChannel + .buffer(.bounded(100))",
          transfer: asyncChannelTransfer(reading: .bounded(100), producers: 1, consumers: 1)),
        ChannelVariant(name: "AsyncStream", notApplicable: noBoundedStream),
      ]),
    ChannelConfiguration(
      name: "1 producer × 1 consumer, unbounded (no back-pressure)",
      variants: [
        ChannelVariant(
          name: "\(solution), capacity 1,000,000",
          transfer: solutionTransfer(capacity: nil, producers: 1, consumers: 1)),
        ChannelVariant(
          name: "AsyncChannel + .buffer(.unbounded)",
          transfer: asyncChannelTransfer(reading: .unbounded, producers: 1, consumers: 1)),
        ChannelVariant(name: "AsyncStream, .unbounded", transfer: asyncStreamTransfer()),
      ]),
    ChannelConfiguration(
      name: "4 producers × 4 consumers, rendezvous",
      variants: [
        ChannelVariant(
          name: solution,
          transfer: solutionTransfer(capacity: 0, producers: 4, consumers: 4)),
        ChannelVariant(
          name: "AsyncChannel",
          transfer: asyncChannelTransfer(reading: .direct, producers: 4, consumers: 4)),
        ChannelVariant(name: "AsyncStream", notApplicable: singleConsumerStream),
      ]),
  ]
}

/// Runs every configuration: one short untimed run of each variant (a tenth of `count`),
/// then `runs` rounds in which every variant of the configuration runs once, in a rotating
/// order.
func measureChannels(count: Int, runs: Int) async throws -> [Entry] {
  let group = "Channel throughput, \(count.formatted()) Ints"
  var entries: [Entry] = []
  for configuration in channelConfigurations() {
    var rows = configuration.variants.map { variant in
      Entry(
        group: group, configuration: configuration.name, variant: variant.name,
        unit: .messagesPerSecond, notApplicable: variant.notApplicable)
    }
    let runnable = configuration.variants.indices.filter {
      configuration.variants[$0].transfer != nil
    }
    Progress.say("channels: \(configuration.name): warming up")
    for index in runnable {
      _ = try await run(configuration.variants[index], count: max(1, count / 10))
    }
    for round in 0..<runs {
      Progress.say("channels: \(configuration.name): run \(round + 1) of \(runs)")
      let shift = round % runnable.count
      for index in runnable[shift...] + runnable[..<shift] {
        let elapsed = try await run(configuration.variants[index], count: count)
        rows[index].samples.append(Double(count) / elapsed)
      }
    }
    // The reference is AsyncChannel in whichever form this configuration uses.
    if let reference = rows.first(where: { $0.variant.hasPrefix("AsyncChannel") }) {
      for index in rows.indices where !rows[index].variant.hasPrefix("AsyncChannel") {
        rows[index].versus = ratio(rows[index], to: reference, name: "AsyncChannel")
      }
      if let index = rows.firstIndex(where: { $0.variant == reference.variant }) {
        rows[index].versus = "reference"
      }
    }
    entries += rows
  }
  return entries
}

/// One timed transfer, in seconds, checked for lost or repeated messages.
func run(_ variant: ChannelVariant, count: Int) async throws -> Double {
  guard let transfer = variant.transfer else { return .nan }
  var outcome = (received: 0, sum: 0)
  let elapsed = try await timed { outcome = try await transfer(count) }
  let expectedSum = (0..<count).reduce(0, &+)
  guard outcome.received == count, outcome.sum == expectedSum else {
    fail(
      "\(variant.name) delivered \(outcome.received) of \(count) messages (sum \(outcome.sum), "
        + "expected \(expectedSum)): the channel lost or repeated messages")
  }
  consume(outcome.sum)
  return elapsed
}
