import CoroutineKit
import Dispatch
import Foundation
import Testing

@Suite("Coroutines and schedulers")
struct CoroutineTests {
  @Test("isInsideCoroutine is true on a coroutine's thread only")
  func insideCoroutine() async throws {
    #expect(!Coroutine.isInsideCoroutine)
    #expect(try await inCoroutine { Coroutine.isInsideCoroutine })
    let onAnotherThread = Locked<Bool?>(nil)
    Thread { onAnotherThread.withLock { $0 = Coroutine.isInsideCoroutine } }.start()
    try await waitUntil("the thread to report") { onAnotherThread.value != nil }
    #expect(onAnotherThread.value == false)
  }

  @Test("startCoroutine runs the body")
  func startCoroutine() async throws {
    let ran = Locked(false)
    DispatchQueue.global().startCoroutine {
      Coroutine.delay(.milliseconds(1))
      ran.withLock { $0 = true }
    }
    try await waitUntil("the coroutine to run") { ran.value }
  }

  @Test("Coroutine.delay blocks the coroutine for at least the duration")
  func delay() async throws {
    let elapsed = try await inCoroutine { () -> Duration in
      let clock = ContinuousClock()
      let start = clock.now
      Coroutine.delay(.milliseconds(80))
      return clock.now - start
    }
    #expect(elapsed >= .milliseconds(80))
  }

  @Test("A coroutine on the main queue gives the queue back while it waits")
  func mainQueueIsFreeWhileSuspended() async throws {
    let promise = CoPromise<Int>()
    // Completed by main-queue work: if await() kept the main queue, this would never run.
    let value = try await inCoroutine(on: .main) {
      DispatchQueue.main.async { promise.success(1) }
      return try promise.await() + 1
    }
    #expect(value == 2)
  }

  @Test("A coroutine runs on a thread of its own, even when started on the main queue")
  func ownThread() async throws {
    #expect(try await inCoroutine(on: .main) { Thread.isMainThread } == false)
  }

  @Test("A coroutine on a serial queue never overlaps the queue's other work")
  func serialQueueExclusion() async throws {
    let queue = DispatchQueue(label: "CoroutineKitTests.serial")
    let inside = Locked(false)
    let overlaps = Locked(0)
    let others = Locked(0)

    try await inCoroutine(on: queue) {
      for _ in 0..<10 {
        inside.withLock { $0 = true }
        // Queued while the body holds the queue: it may run only once the body suspends.
        queue.async {
          if inside.value { overlaps.withLock { $0 += 1 } }
          others.withLock { $0 += 1 }
        }
        Thread.sleep(forTimeInterval: 0.002)
        inside.withLock { $0 = false }
        Coroutine.delay(.milliseconds(1))  // suspended: the queue is free
      }
    }

    #expect(overlaps.value == 0, "the queue ran other work while the coroutine held it")
    #expect(others.value == 10, "the queue did not run its other work while the coroutine waited")
  }

  @Test("Coroutines started from inside a coroutine run and can be awaited")
  func nested() async throws {
    let total = try await inCoroutine(on: .main) {
      let parts = (1...4).map { n in DispatchQueue.main.coroutineFuture { n * n } }
      return try parts.reduce(0) { try $0 + $1.await() }
    }
    #expect(total == 30)
  }

  @Test("await() outside a coroutine stops the program")
  func awaitOutsideCoroutine() async {
    await #expect(processExitsWith: .failure) {
      _ = try? CoFuture(value: 1).await()
    }
  }

  @Test("awaitReceive() outside a coroutine stops the program")
  func receiveOutsideCoroutine() async {
    await #expect(processExitsWith: .failure) {
      let channel = CoChannel<Int>(bufferType: .unlimited)
      channel.offer(1)
      _ = try? channel.awaitReceive()
    }
  }
}
