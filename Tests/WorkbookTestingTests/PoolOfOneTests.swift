import Dispatch
import Foundation
import Testing

@testable import WorkbookTesting

/// The pool detector lets code that suspends pass, however many tasks it starts. That it
/// catches code that blocks (a semaphore in the task, a blocking wait in `Task.detached`,
/// the main actor blocked) is proven end to end by the catalogue's mistakes of that kind
/// (`make verify`), each graded in a test process of its own: blocking the pool here, in
/// the one process all these suites share, would starve the suites running beside it.
/// Serialized: the squeeze holds pool threads.
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
}
