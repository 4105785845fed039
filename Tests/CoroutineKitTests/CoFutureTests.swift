import CoroutineKit
import Dispatch
import Foundation
import Testing

@Suite("CoFuture and CoPromise")
struct CoFutureTests {
  @Test("The first result wins; later attempts are ignored and say so")
  func firstResultWins() throws {
    let promise = CoPromise<Int>()
    #expect(!promise.isCompleted)
    #expect(promise.result == nil)

    #expect(promise.success(1))
    #expect(!promise.success(2))
    #expect(!promise.fail(Boom()))
    #expect(!promise.complete(with: .success(3)))
    promise.cancel()

    #expect(promise.isCompleted)
    #expect(!promise.isCanceled)
    #expect(try promise.result?.get() == 1)
  }

  @Test("A failure is kept just the same")
  func failureIsKept() {
    let promise = CoPromise<Int>()
    #expect(promise.fail(Boom()))
    #expect(!promise.success(1))
    #expect(throws: Boom()) { try promise.result?.get() }
  }

  @Test("One of many threads completing a promise at once wins")
  func oneOfManyWins() async throws {
    for _ in 0..<20 {
      let promise = CoPromise<Int>()
      let wins = Locked(0)
      DispatchQueue.concurrentPerform(iterations: 8) { attempt in
        if promise.success(attempt) { wins.withLock { $0 += 1 } }
      }
      #expect(wins.value == 1)
    }
  }

  @Test("await() blocks the coroutine until another thread completes the promise")
  func awaitBlocks() async throws {
    let promise = CoPromise<Int>()
    let awaited = DispatchQueue.global().coroutineFuture { try promise.await() }
    try await expectStillPending(awaited, "await() returned before the promise had a value")

    DispatchQueue.global().async { promise.success(42) }

    #expect(try await value(of: awaited) == 42)
  }

  @Test("await() returns at once for a completed future, and throws its error")
  func awaitCompleted() async throws {
    #expect(try await inCoroutine { try CoFuture(value: 5).await() } == 5)
    await #expect(throws: Boom()) {
      try await inCoroutine { try CoFuture<Int>(error: Boom()).await() }
    }
  }

  @Test("Every coroutine awaiting one promise gets its value, early or late")
  func manyAwaiters() async throws {
    let promise = CoPromise<Int>()
    let early = (0..<16).map { _ in DispatchQueue.global().coroutineFuture { try promise.await() } }
    try await expectStillPending(early[0], "an awaiter returned before the promise had a value")

    promise.success(7)
    let late = try await inCoroutine { try promise.await() }

    for awaiter in early { #expect(try await value(of: awaiter) == 7) }
    #expect(late == 7)
  }

  @Test("await(timeout:) gives up with .timeout and leaves the future pending")
  func awaitTimesOut() async throws {
    let promise = CoPromise<Int>()
    let clock = ContinuousClock()
    let start = clock.now

    await #expect(throws: CoFutureError.timeout) {
      try await inCoroutine { try promise.await(timeout: .milliseconds(100)) }
    }

    #expect(clock.now - start >= .milliseconds(100))
    #expect(!promise.isCompleted)
    #expect(promise.success(1))
  }

  @Test("await(timeout:) returns the value when it comes in time")
  func awaitInTime() async throws {
    let promise = CoPromise<Int>()
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { promise.success(9) }
    #expect(try await inCoroutine { try promise.await(timeout: .seconds(4)) } == 9)
    // The expired timer of a finished wait must not disturb the next one.
    #expect(try await inCoroutine { try promise.await(timeout: .milliseconds(1)) } == 9)
  }

  @Test("cancel() fails the future, and every coroutine awaiting it, with .cancelled")
  func cancel() async throws {
    let promise = CoPromise<Int>()
    let awaited = DispatchQueue.global().coroutineFuture { try promise.await() }
    try await expectStillPending(awaited, "await() returned before the promise had a value")

    promise.cancel()

    await #expect(throws: CoFutureError.cancelled) { try await value(of: awaited) }
    #expect(promise.isCanceled)
    #expect(!promise.success(1))
  }

  @Test("Callbacks run once each, in the order registered; late ones at once")
  func callbacks() {
    let promise = CoPromise<Int>()
    let calls = Locked<[String]>([])
    promise.whenComplete { result in calls.withLock { $0.append("complete \(result)") } }
    promise.whenSuccess { value in calls.withLock { $0.append("success \(value)") } }
    promise.whenFailure { _ in calls.withLock { $0.append("failure") } }
    promise.whenCanceled { calls.withLock { $0.append("cancelled") } }
    #expect(calls.value.isEmpty)

    promise.success(3)
    promise.success(4)
    promise.whenSuccess { value in calls.withLock { $0.append("late \(value)") } }

    #expect(calls.value == ["complete success(3)", "success 3", "late 3"])
  }

  @Test("whenFailure and whenCanceled see a cancellation")
  func cancellationCallbacks() {
    let promise = CoPromise<Int>()
    let calls = Locked<[String]>([])
    promise.whenSuccess { _ in calls.withLock { $0.append("success") } }
    promise.whenFailure { error in calls.withLock { $0.append("failure \(error)") } }
    promise.whenCanceled { calls.withLock { $0.append("cancelled") } }

    promise.cancel()

    #expect(calls.value == ["failure cancelled", "cancelled"])
  }

  @Test("map transforms the value; errors pass through or come from the transform")
  func map() throws {
    let source = CoPromise<Int>()
    let doubled = source.map { $0 * 2 }
    #expect(!doubled.isCompleted)
    source.success(21)
    #expect(try doubled.result?.get() == 42)

    let failing = CoPromise<Int>()
    let passedThrough = failing.map { $0 * 2 }
    failing.fail(Boom())
    #expect(throws: Boom()) { try passedThrough.result?.get() }

    let thrown = CoFuture(value: 1).map { _ -> Int in throw Boom() }
    #expect(throws: Boom()) { try thrown.result?.get() }
  }

  @Test("flatMap waits for the future the transform returns")
  func flatMap() async throws {
    let first = CoPromise<Int>()
    let second = CoPromise<String>()
    let chained = first.flatMap { number in second.map { "\($0) \(number)" } }
    first.success(1)
    #expect(!chained.isCompleted)
    second.success("round")
    #expect(try chained.result?.get() == "round 1")

    let slow = DispatchQueue.global().coroutineFuture { () -> Int in
      Coroutine.delay(.milliseconds(20))
      return 2
    }
    let product = slow.flatMap { n in DispatchQueue.global().coroutineFuture { n * 10 } }
    #expect(try await inCoroutine { try product.await() } == 20)

    let thrown = CoFuture(value: 1).flatMap { _ -> CoFuture<Int> in throw Boom() }
    #expect(throws: Boom()) { try thrown.result?.get() }
  }

  @Test("Cancelling a mapped future cancels the future it came from")
  func cancelPropagatesUpstream() {
    let source = CoPromise<Int>()
    let mapped = source.map { $0 + 1 }
    mapped.cancel()
    #expect(mapped.isCanceled)
    #expect(source.isCanceled)

    let first = CoPromise<Int>()
    let inner = CoPromise<Int>()
    let chained = first.flatMap { _ in inner }
    first.success(1)
    chained.cancel()
    #expect(inner.isCanceled)
    #expect(!first.isCanceled)
  }

  @Test("coroutineFuture carries the body's value or error")
  func coroutineFuture() async throws {
    #expect(try await value(of: DispatchQueue.global().coroutineFuture { 3 }) == 3)
    await #expect(throws: Boom()) {
      try await value(of: DispatchQueue.global().coroutineFuture { () -> Int in throw Boom() })
    }
  }

  @Test("Futures of Sendable values can be shared with tasks")
  func sendable() async throws {
    let promise = CoPromise<Int>()
    let reader = Task { try await value(of: promise) }
    promise.success(8)
    #expect(try await reader.value == 8)
  }
}
