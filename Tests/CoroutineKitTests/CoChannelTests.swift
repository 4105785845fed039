import CoroutineKit
import Dispatch
import Foundation
import Testing

@Suite("CoChannel")
struct CoChannelTests {
  @Test("Rendezvous: a sender waits until a receiver takes its element")
  func rendezvousSender() async throws {
    let channel = CoChannel<Int>(bufferType: .rendezvous)
    #expect(!channel.offer(1), "offer succeeded with nobody receiving")

    let sending = DispatchQueue.global().coroutineFuture { try channel.awaitSend(1) }
    try await expectStillPending(sending, "awaitSend returned before anyone received")
    #expect(channel.count == 0)

    #expect(try await inCoroutine { try channel.awaitReceive() } == 1)
    try await value(of: sending)
    #expect(channel.poll() == nil)
  }

  @Test("Rendezvous: a waiting receiver takes an offered element at once")
  func rendezvousReceiver() async throws {
    let channel = CoChannel<Int>(bufferType: .rendezvous)
    let receiving = DispatchQueue.global().coroutineFuture { try channel.awaitReceive() }
    try await expectStillPending(receiving, "awaitReceive returned from an empty channel")

    try await waitUntil("a receiver to take the offer") { channel.offer(2) }

    #expect(try await value(of: receiving) == 2)
  }

  @Test("Buffered: senders wait only when the buffer is full")
  func buffered() async throws {
    let channel = CoChannel<Int>(capacity: 2)
    #expect(channel.offer(1))
    #expect(channel.offer(2))
    #expect(!channel.offer(3), "offer succeeded into a full buffer")
    #expect(channel.count == 2)

    let sending = DispatchQueue.global().coroutineFuture { try channel.awaitSend(3) }
    try await expectStillPending(sending, "awaitSend returned while the buffer was full")

    #expect(channel.poll() == 1)
    try await value(of: sending)
    #expect(channel.count == 2)
    #expect(channel.poll() == 2)
    #expect(channel.poll() == 3)
    #expect(channel.poll() == nil)
  }

  @Test("Unlimited: sends never wait; elements come out first in, first out")
  func unlimited() async throws {
    let channel = CoChannel<Int>(bufferType: .unlimited)
    for number in 0..<10_000 { #expect(channel.offer(number)) }
    try await inCoroutine { for number in 10_000..<10_100 { try channel.awaitSend(number) } }
    #expect(channel.count == 10_100)

    var received: [Int] = []
    while let number = channel.poll() { received.append(number) }
    #expect(received == Array(0..<10_100))
  }

  @Test("Conflated: only the newest element is kept; sends never wait")
  func conflated() async throws {
    let channel = CoChannel<Int>(bufferType: .conflated)
    #expect(channel.offer(1))
    #expect(channel.offer(2))
    #expect(channel.offer(3))
    #expect(channel.count == 1)
    #expect(channel.poll() == 3)
    #expect(channel.poll() == nil)

    try await inCoroutine {
      try channel.awaitSend(4)
      try channel.awaitSend(5)
    }
    #expect(try await inCoroutine { try channel.awaitReceive() } == 5)

    let receiving = DispatchQueue.global().coroutineFuture { try channel.awaitReceive() }
    try await expectStillPending(receiving, "awaitReceive returned from an empty channel")
    try await waitUntil("a receiver to take the offer") { channel.offer(6) }
    #expect(try await value(of: receiving) == 6)
  }

  @Test("Capacity 0 is a rendezvous")
  func capacityZero() {
    let channel = CoChannel<Int>(capacity: 0)
    #expect(!channel.offer(1))
    #expect(channel.count == 0)
  }

  @Test("After close(), receivers drain the buffer and then get .closed")
  func closeThenDrain() async throws {
    let channel = CoChannel<Int>(capacity: 3)
    let completed = Locked(false)
    channel.whenComplete { completed.withLock { $0 = true } }
    for number in 1...3 { channel.offer(number) }

    #expect(channel.close())
    #expect(!channel.close(), "a second close() reported success")
    #expect(channel.isClosed)
    #expect(!channel.isCanceled)
    #expect(!channel.offer(4), "offer succeeded after close()")
    #expect(!completed.value, "the channel completed with elements still buffered")

    #expect(try await inCoroutine { Array(channel) } == [1, 2, 3])
    #expect(completed.value)
    await #expect(throws: CoChannelError.closed) {
      try await inCoroutine { try channel.awaitReceive() }
    }
    await #expect(throws: CoChannelError.closed) {
      try await inCoroutine { try channel.awaitSend(5) }
    }
    #expect(channel.poll() == nil)
  }

  @Test("close() ends waiting receivers and fails waiting senders, whose elements are not sent")
  func closeReleasesWaiters() async throws {
    let empty = CoChannel<Int>(bufferType: .rendezvous)
    let receiving = DispatchQueue.global().coroutineFuture { try empty.awaitReceive() }
    try await expectStillPending(receiving, "awaitReceive returned from an empty channel")
    empty.close()
    await #expect(throws: CoChannelError.closed) { try await value(of: receiving) }

    let full = CoChannel<Int>(capacity: 1)
    full.offer(1)
    let sending = DispatchQueue.global().coroutineFuture { try full.awaitSend(2) }
    try await expectStillPending(sending, "awaitSend returned while the buffer was full")
    full.close()
    await #expect(throws: CoChannelError.closed) { try await value(of: sending) }
    #expect(full.poll() == 1)
    #expect(full.poll() == nil)
  }

  @Test("cancel() drops the buffer and fails everyone waiting with .cancelled")
  func cancel() async throws {
    let channel = CoChannel<Int>(capacity: 1)
    let completed = Locked(false)
    channel.whenComplete { completed.withLock { $0 = true } }
    channel.offer(1)
    let sending = DispatchQueue.global().coroutineFuture { try channel.awaitSend(2) }
    try await expectStillPending(sending, "awaitSend returned while the buffer was full")

    channel.cancel()

    await #expect(throws: CoChannelError.cancelled) { try await value(of: sending) }
    #expect(channel.isCanceled)
    #expect(channel.isClosed)
    #expect(channel.count == 0)
    #expect(completed.value)
    #expect(channel.poll() == nil)
    #expect(!channel.offer(3))
    await #expect(throws: CoChannelError.cancelled) {
      try await inCoroutine { try channel.awaitReceive() }
    }

    let empty = CoChannel<Int>(bufferType: .unlimited)
    let receiving = DispatchQueue.global().coroutineFuture { try empty.awaitReceive() }
    try await expectStillPending(receiving, "awaitReceive returned from an empty channel")
    empty.cancel()
    await #expect(throws: CoChannelError.cancelled) { try await value(of: receiving) }
  }

  @Test("Iteration receives everything sent and ends when the channel is closed")
  func iteration() async throws {
    let channel = CoChannel<Int>(capacity: 4)
    DispatchQueue.global().startCoroutine {
      for number in 1...100 { try channel.awaitSend(number) }
      channel.close()
    }
    let received = try await inCoroutine {
      var received: [Int] = []
      for number in channel { received.append(number) }
      return received
    }
    #expect(received == Array(1...100))
  }

  @Test("whenReceive takes one element by callback, now or later")
  func whenReceive() async throws {
    let channel = CoChannel<Int>(bufferType: .unlimited)
    let received = Locked<[String]>([])
    channel.offer(1)
    channel.whenReceive { result in received.withLock { $0.append("\(result)") } }
    channel.whenReceive { result in received.withLock { $0.append("\(result)") } }
    #expect(received.value == ["success(1)"])

    channel.offer(2)
    channel.whenReceive { result in received.withLock { $0.append("\(result)") } }
    channel.close()

    #expect(
      received.value == ["success(1)", "success(2)", "failure(CoroutineKit.CoChannelError.closed)"])
  }

  static let stressKinds: [CoChannel<Int>.BufferType] = [
    .rendezvous, .buffered(capacity: 1), .buffered(capacity: 8), .unlimited,
  ]

  @Test(
    "Many producers and consumers: every element once, in each producer's order",
    arguments: stressKinds)
  func manyProducersAndConsumers(kind: CoChannel<Int>.BufferType) async throws {
    let producers = 4
    let consumers = 4
    let perProducer = 250
    let channel = CoChannel<Int>(bufferType: kind)

    let sending = (0..<producers).map { producer in
      DispatchQueue.global().coroutineFuture {
        for index in 0..<perProducer { try channel.awaitSend(producer * 10_000 + index) }
      }
    }
    let receiving = (0..<consumers).map { _ in
      DispatchQueue.global().coroutineFuture { Array(channel) }
    }
    for producer in sending { try await value(of: producer, "a producer") }
    channel.close()
    var everything: [Int] = []
    for consumer in receiving {
      let received = try await value(of: consumer, "a consumer")
      for producer in 0..<producers {
        let fromProducer = received.filter { $0 / 10_000 == producer }
        #expect(
          fromProducer == fromProducer.sorted(), "a consumer got a producer's elements out of order"
        )
      }
      everything += received
    }

    let sent = (0..<producers).flatMap { producer in
      (0..<perProducer).map { producer * 10_000 + $0 }
    }
    #expect(everything.count == sent.count)
    #expect(everything.sorted() == sent.sorted())
  }
}
