import Dispatch
import Foundation
import Testing

@testable import WorkbookTesting

/// The pool detector: code that suspends passes however many tasks it starts; code that
/// blocks a thread of the concurrency pool is caught, in whatever task it blocks.
/// Serialized: the squeeze holds pool threads, and these tests time what happens then.
@Suite("withPoolOfOne", .serialized)
struct PoolOfOneTests {
  /// A value delivered later on a Dispatch queue, as a legacy framework would.
  static func deliverLater(_ body: @escaping @Sendable (String) -> Void) {
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300)) { body("done") }
  }

  /// A blocking wait, as a learner's helper function would hide it from the compiler.
  static func blockThread(seconds: Double) { Thread.sleep(forTimeInterval: seconds) }

  @Test("Suspending until a late callback passes")
  func suspending() async throws {
    let findings = await capturingFindings {
      let value = try? await withPoolOfOne("suspending") {
        await withCheckedContinuation { continuation in
          Self.deliverLater { continuation.resume(returning: $0) }
        }
      }
      #expect(value == "done")
    }
    #expect(findings.isEmpty)
  }

  @Test("Many child tasks that sleep share the one thread and pass")
  func manyChildren() async throws {
    let findings = await capturingFindings {
      let total = try? await withPoolOfOne("children") {
        await withTaskGroup(of: Int.self) { group in
          for index in 0..<20 {
            group.addTask {
              try? await Task.sleep(for: .milliseconds(50))
              return index
            }
          }
          return await group.reduce(0, +)
        }
      }
      #expect(total == 190)
    }
    #expect(findings.isEmpty)
  }

  @Test("A semaphore in the awaiting task is caught")
  func semaphoreInTheTask() async throws {
    let findings = await capturingFindings {
      await #expect(throws: PoolThreadBlocked.self) {
        try await withPoolOfOne("semaphore", patience: .milliseconds(500)) {
          let done = DispatchSemaphore(value: 0)
          DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(3)) { done.signal() }
          done.wait()
        }
      }
    }
    #expect(findings.count == 1)
    #expect(findings.first?.hasPrefix("\(poolBlockedMarker) semaphore blocked its thread") == true)
  }

  @Test("A blocking wait moved into Task.detached is caught too")
  func blockingInADetachedTask() async throws {
    let findings = await capturingFindings {
      await #expect(throws: PoolThreadBlocked.self) {
        try await withPoolOfOne("detached sleep", patience: .milliseconds(500)) {
          await Task.detached { Self.blockThread(seconds: 3) }.value
        }
      }
    }
    #expect(findings.count == 1)
  }

  @Test("Runs that overlap share one squeeze: a correct answer inside another passes")
  func nested() async throws {
    let findings = await capturingFindings {
      let value = try? await withPoolOfOne("outer") {
        async let first = withPoolOfOne("first") {
          await withCheckedContinuation { continuation in
            Self.deliverLater { continuation.resume(returning: $0) }
          }
        }
        async let second = withPoolOfOne("second") {
          try await Task.sleep(for: .milliseconds(100))
          return "slept"
        }
        return try await first + " " + second
      }
      #expect(value == "done slept")
    }
    #expect(findings.isEmpty)
  }

  @Test("Blocking the main actor is caught as such")
  func blockingTheMainActor() async throws {
    let findings = await capturingFindings {
      await #expect(throws: PoolThreadBlocked.self) {
        try await withPoolOfOne("refresh()", patience: .milliseconds(500)) {
          await MainActor.run { Self.blockThread(seconds: 2) }
        }
      }
    }
    #expect(findings.count == 1)
    #expect(
      findings.first?.hasPrefix("\(mainActorBlockedMarker) refresh() blocked the main") == true)
  }
}
