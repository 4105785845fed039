import Foundation
import Testing

@testable import WorkbookCore

/// Notes on passing answers: each detector finds its shape and nothing that only looks like
/// it, in code only (never in a comment or a string), and a rule applies to the exercises it
/// lists.
@Suite struct NoteFinderTests {
  static func rule(
    _ id: String, _ type: NoteType = .actionable, constructs: [String]? = nil,
    detector: NoteDetector? = nil, exercises: [String] = ["*"], except: [String]? = nil
  ) -> NoteRule {
    NoteRule(
      id: id, type: type, constructs: constructs, detector: detector, message: "why \(id)",
      exercises: exercises, except: except)
  }

  /// The ids and lines of the notes `source` earns as exercise `id` under `rules`.
  static func found(
    _ source: String, _ rules: [NoteRule], as id: String = "3.2"
  ) -> [String: [Int]] {
    Dictionary(
      uniqueKeysWithValues: NoteFinder.notes(in: source, exerciseID: id, rules: rules).map {
        ($0.id, $0.lines)
      })
  }

  static func lines(_ detector: NoteDetector, _ source: String) -> [Int] {
    found(source, [rule("x", detector: detector)])["x"] ?? []
  }

  /// One shape each detector must find: a new detector needs a sample here, and a test of
  /// its own below.
  static let samples: [NoteDetector: String] = [
    .detachedTask: "let t = Task<Int, Never>.detached { 1 }",
    .blockingWaitInAsyncCode: "func f() async { semaphore.wait() }",
    .lockHeldAcrossAwait: "func f() async { lock.lock(); await g(); lock.unlock() }",
    .taskInLoop: "for x in xs { Task { await use(x) } }",
    .mainActorRunOnMainActor: "@MainActor func f() async { await MainActor.run { } }",
    .streamWithoutOnTermination: "let s = AsyncStream<Int> { continuation in }",
  ]

  @Test(arguments: NoteDetector.allCases)
  func everyDetectorFindsItsSampleAndNotTheSampleInAComment(_ detector: NoteDetector) throws {
    let sample = try #require(Self.samples[detector], "no sample for \(detector)")
    #expect(Self.lines(detector, sample) == [1])
    #expect(Self.lines(detector, "// " + sample).isEmpty)
    #expect(
      Self.lines(detector, "let text = \"" + sample.replacingOccurrences(of: "\"", with: "") + "\"")
        .isEmpty)
  }

  @Test func constructsAreFoundInCodeButNotInCommentsOrStrings() {
    let source = """
      // Task.detached would lose the caller's cancellation.
      let why = "not Task.detached"
      let task = Task.detached {
        await work()
      }
      let again = Task .detached { }
      """
    let notes = NoteFinder.notes(
      in: source, exerciseID: "3.2", rules: [Self.rule("detached", constructs: ["Task.detached"])])
    #expect(notes.map(\.lines) == [[3, 6]])
    #expect(notes.first?.line == 3)
    #expect(notes.first?.column == 12)
  }

  @Test func aDetachedTaskIsFoundInEverySpelling() {
    let source = """
      let a = Task.detached { 1 }
      let b = Task<[String: Set<Int>], Never>.detached(priority: .utility) { [:] }
      let c = Task
        .detached { 2 }
      let d = MyTask.detached { 3 }
      """
    #expect(Self.lines(.detachedTask, source) == [1, 2, 3])
  }

  @Test func aRuleAppliesToTheExercisesItListsButNotThoseItExcepts() {
    let rule = Self.rule("r", exercises: ["3.*", "5.1"], except: ["3.3"])
    #expect(rule.applies(to: "3.2"))
    #expect(rule.applies(to: "5.1"))
    #expect(!rule.applies(to: "3.3"))
    #expect(!rule.applies(to: "5.10"))
    #expect(!rule.applies(to: "30.1"))
    #expect(Self.rule("all").applies(to: "10.7"))
    let source = "let c = withUnsafeContinuation { _ in }"
    let unsafe = Self.rule("u", constructs: ["withUnsafeContinuation"], except: ["3.3"])
    #expect(Self.found(source, [unsafe], as: "3.3").isEmpty)
    #expect(Self.found(source, [unsafe], as: "1.1") == ["u": [1]])
  }

  @Test func blockingWaitsCountOnlyInAsyncCode() {
    let source = """
      func legacy() {
        semaphore.wait()
      }
      func load() async -> Int {
        group.wait()
        await gate.wait()
        return await withCheckedContinuation { continuation in
          done.wait()
          Thread.sleep(forTimeInterval: 0.1)
          try? await Task.sleep(for: .seconds(1))
        }
      }
      func run(_ body: () async -> Void) {
        semaphore.wait()
      }
      func elsewhere() async {
        DispatchQueue.global().async {
          semaphore.wait()
        }
      }
      let task = Task {
        usleep(1_000)
      }
      func timed() async {
        _ = semaphore.wait(timeout: .now() + 1)
        race.wait(with: continuation)
      }
      """
    #expect(Self.lines(.blockingWaitInAsyncCode, source) == [5, 8, 9, 22, 25])
  }

  @Test func aLockHeldAcrossAnAwaitIsFoundWhereverItIsReleased() {
    let source = """
      func settle() async {
        lock.lock()
        let value = await fetch()
        lock.unlock()
      }
      func deferred() async {
        lock.lock()
        defer { lock.unlock() }
        await fetch()
      }
      func tidy() async {
        lock.lock()
        count += 1
        lock.unlock()
        await fetch()
      }
      func gate() async {
        semaphore.wait()
        defer { semaphore.signal() }
        await fetch()
      }
      func callback() async {
        await withCheckedContinuation { continuation in
          semaphore.wait()
        }
      }
      func earlyExit() async throws -> Int {
        lock.lock()
        if let cached {
          lock.unlock()
          return cached
        }
        let fresh = try await load()
        lock.unlock()
        return fresh
      }
      """
    #expect(Self.lines(.lockHeldAcrossAwait, source) == [2, 7, 18, 28])
  }

  @Test func aTaskPerElementOfALoopIsFoundButNotATaskAroundTheLoop() {
    let source = """
      func forecast(for city: String) {
        Task { await refresh() }
      }
      func start() {
        for photo in photos {
          Task { await upload(photo) }
        }
        Task {
          for photo in photos { await upload(photo) }
        }
        photos.forEach { photo in
          Task.detached(priority: .low) { await upload(photo) }
        }
        while let line = readLine() {
          group.addTask { await send(line) }
        }
        repeat {
          Task { @MainActor in tick() }
        } while running
      }
      """
    #expect(Self.lines(.taskInLoop, source) == [6, 12, 18])
  }

  @Test func mainActorRunIsFoundOnlyInCodeOnTheMainActor() {
    let source = """
      @MainActor
      final class Model {
        func refresh() async {
          let count = await fetch()
          await MainActor.run { self.count = count }
        }
        nonisolated func load() async {
          await MainActor.run { print("fine") }
        }
        func later() {
          Task.detached {
            await MainActor.run { print("fine") }
          }
        }
      }
      func free() async {
        await MainActor.run { print("fine") }
      }
      @MainActor func show() async {
        await MainActor.run { print("needless") }
      }
      let job = Task { @MainActor in
        await MainActor.run { print("needless") }
      }
      extension Model {
        func sync() async {
          await MainActor.run { print("needless") }
        }
      }
      """
    #expect(Self.lines(.mainActorRunOnMainActor, source) == [5, 20, 23, 27])
  }

  @Test func aStreamWithAContinuationNeedsOnTermination() {
    let built = """
      func ticks() -> AsyncStream<Int> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
          source.start { continuation.yield($0) }
        }
      }
      let (stream, feed) = AsyncStream<Int>.makeStream()
      """
    #expect(Self.lines(.streamWithoutOnTermination, built) == [2, 6])
    let finite = """
      let words = AsyncStream<String> { continuation in
        for word in ["a", "b"] { continuation.yield(word) }
        continuation.finish()
      }
      """
    #expect(Self.lines(.streamWithoutOnTermination, finite).isEmpty)
    let stopped = built + "\nfeed.onTermination = { _ in source.stop() }"
    #expect(Self.lines(.streamWithoutOnTermination, stopped).isEmpty)
    let pulled = """
      func poll() -> AsyncThrowingStream<String, any Error> {
        AsyncThrowingStream {
          try await fetch()
        }
      }
      let other = AsyncStream(unfolding: { await next() })
      """
    #expect(Self.lines(.streamWithoutOnTermination, pulled).isEmpty)
  }
}
