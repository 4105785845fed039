import CoroutineKit
import Dispatch
import Foundation
import Testing

@Suite("CoScope")
struct CoScopeTests {
  final class Job: CoCancellable, @unchecked Sendable {
    let cancels = Locked(0)
    func cancel() { cancels.withLock { $0 += 1 } }
  }

  @Test("cancel() cancels everything the scope holds, and anything added later")
  func cancel() {
    let scope = CoScope()
    let promise = CoPromise<Int>()
    let channel = CoChannel<Int>(bufferType: .unlimited)
    let inner = CoScope()
    let job = Job()
    let cancelled = Locked(0)
    scope.add(promise)
    channel.added(to: scope)
    scope.add(inner)
    scope.add(job)
    scope.whenCanceled { cancelled.withLock { $0 += 1 } }
    #expect(!scope.isCanceled)

    scope.cancel()
    scope.cancel()

    #expect(scope.isCanceled)
    #expect(promise.isCanceled)
    #expect(channel.isCanceled)
    #expect(inner.isCanceled)
    #expect(job.cancels.value == 1)
    #expect(cancelled.value == 1)
    #expect(scope.isEmpty)

    let late = CoPromise<Int>().added(to: scope)
    #expect(late.isCanceled)
  }

  @Test("Letting the scope go cancels what it held")
  func deinitCancels() {
    let promise = CoPromise<Int>()
    let channel = CoChannel<Int>(capacity: 2)
    channel.offer(1)
    do {
      let scope = CoScope()
      scope.add(promise)
      scope.add(channel)
    }
    #expect(promise.isCanceled)
    #expect(channel.isCanceled)
    #expect(channel.poll() == nil)
  }

  @Test("Completed futures and finished channels leave the scope")
  func completedLeave() throws {
    let scope = CoScope()
    let promise = CoPromise<Int>().added(to: scope)
    let channel = CoChannel<Int>(capacity: 1).added(to: scope)
    channel.offer(1)
    promise.success(1)
    channel.close()
    #expect(!scope.isEmpty, "a closed channel left the scope before it was drained")

    #expect(channel.poll() == 1)

    #expect(scope.isEmpty)
    scope.cancel()
    #expect(try promise.result?.get() == 1, "cancelling the scope changed a completed future")
  }

  @Test("A coroutine blocked on a future of the scope is released when the scope is cancelled")
  func releasesBlockedCoroutine() async throws {
    let scope = CoScope()
    let promise = CoPromise<Int>().added(to: scope)
    let channel = CoChannel<Int>(bufferType: .rendezvous).added(to: scope)
    let awaiting = DispatchQueue.global().coroutineFuture { try promise.await() }
    let receiving = DispatchQueue.global().coroutineFuture { try channel.awaitReceive() }
    try await expectStillPending(awaiting, "await() returned before the promise had a value")

    scope.cancel()

    await #expect(throws: CoFutureError.cancelled) { try await value(of: awaiting) }
    await #expect(throws: CoChannelError.cancelled) { try await value(of: receiving) }
  }
}
