import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import Callbacks

/// The contract of `classify(_:using:)`: each path, what the caller sees, and the test that
/// checks it (— where a column does not apply, and why).
///
/// | path | result, error | classifier requests | thread, timing |
/// | --- | --- | --- | --- |
/// | recognised (inside the call, soon, later) | the label: `returnsTheLabel` | one per call: `asksOnce` | any thread: `returnsTheLabel` |
/// | any label: blank, padded, capitals, emoji | that label, exactly as given: `labelAsGiven` | — | — |
/// | not recognised, unreadable | the classifier's own error, unchanged: `throwsTheError` | one, even for an empty image: `asksAboutEveryImage` | — |
/// | answer on the caller's own thread, 0.5 s later | the label: `suspendsWhileWaiting` | — | suspends, neither blocks nor polls: `suspendsWhileWaiting` |
/// | the app's main thread busy | the label, while it is still busy: `doesNotWaitForTheMainThread` | — | no hop through the main thread: `doesNotWaitForTheMainThread` |
/// | success, failure, success on one classifier | each its own outcome: `reuse` | three: `reuse` | — |
/// | answer 2.5 s later | the label: `slowClassifierHoldsNoThread` | — | holds no thread of the pool while it waits, in any task: `slowClassifierHoldsNoThread` |
/// | never answered | — an `ImageClassifier` answers every request once; a continuation never resumed fails every test's deadline | | |
/// | two calls at once | — each call has a continuation of its own and shares nothing but the classifier | | |
/// | cancelled while it waits | the label or `CancellationError`, once, and nothing more when the answer comes: `cancelledWhileWaiting` | one: `cancelledWhileWaiting` | — |
/// | cancelled before, after | — as "while it waits": the classifier cannot cancel, so nothing differs | | |
@Suite("1.2 Result callback")
struct ResultCallbackTests {
  static let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(200))]

  static let cat = Data("whiskers and a tail".utf8)
  static let zebra = Data("black and white stripes".utf8)

  static func makeClassifier(script: CallbackScript) -> ImageClassifier {
    ImageClassifier(knownImages: [cat: "cat"], script: script)
  }

  static let successHint =
    "classify(_:using:) must resume its continuation with the handler's Result"
  static let failureHint =
    "the .failure case never resumes the continuation: the caller waits forever for a "
    + "classification that failed"

  @Test("Returns the label of an image the classifier recognises", arguments: scripts)
  func returnsTheLabel(script: CallbackScript) async throws {
    let classifier = Self.makeClassifier(script: script)

    let label: String
    do {
      label = try await withDeadline(.seconds(2), "classify(_:using:)", hint: Self.successHint) {
        try await classify(Self.cat, using: classifier)
      }
    } catch is CancellationError {
      Issue.record(
        """
        classify(_:using:) threw CancellationError though nobody cancelled this call: a call \
        must not be cancelled by another one (a newer call, or a cancel kept from an earlier \
        one); each call is answered on its own
        """)
      return
    }

    #expect(label == "cat")
  }

  @Test(
    "Throws the classifier's error when it cannot label the image",
    arguments: [ClassificationError.unrecognised, .unreadableImage], scripts)
  func throwsTheError(expected: ClassificationError, script: CallbackScript) async throws {
    let classifier = Self.makeClassifier(script: script)
    let image = expected == .unreadableImage ? Data() : Self.zebra

    // Whether the classifier had answered when classify returned or threw.
    let answeredAtReturn = Locked<Bool?>(nil)
    await Self.expectClassifierError(expected, early: { answeredAtReturn.value == false }) {
      defer { answeredAtReturn.withLock { $0 = classifier.answerCount > 0 } }
      return try await classify(image, using: classifier)
    }
  }

  /// Checks that `operation` throws the classifier's own `expected` error; `early()` says
  /// whether it ended before the classifier had answered at all.
  static func expectClassifierError(
    _ expected: ClassificationError, early: @escaping @Sendable () -> Bool = { false },
    sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable () async throws -> String
  ) async {
    let tooSoon =
      "before the classifier had answered at all: classify must wait, suspended, until the "
      + "classifier's completion handler delivers its result, and pass that result on"
    await expectThrows(
      expected, from: "classify(_:using:)", hint: failureHint,
      returned: { label in
        early()
          ? "classify(_:using:) returned \"\(label)\" " + tooSoon
          : "classify(_:using:) returned \"\(label)\" although the classifier reported "
            + "\(expected): on .failure, throw the classifier's error instead of returning a label"
      },
      wrongError: { error in
        early()
          ? "classify(_:using:) threw \(error) " + tooSoon
          : "classify(_:using:) threw \(error), not the classifier's own error \(expected): "
            + "pass the .failure's error on unchanged"
      },
      sourceLocation: sourceLocation, operation)
  }

  @Test("Suspends while it waits, so an answer delivered on its own thread can arrive")
  func suspendsWhileWaiting() async throws {
    let executor = OneThreadExecutor()
    let classifier = Self.makeClassifier(script: lateOnThreadOf(executor))

    let label = try await expectSuspends(
      "classify(_:using:)", hint: Self.successHint, on: executor
    ) {
      try await classify(Self.cat, using: classifier)
    }

    #expect(label == "cat", "classify(_:using:) must return the label the classifier gives")
  }

  @Test(
    "Returns whatever label the classifier gives, exactly as given",
    arguments: ["", " ", "  Grey cat\n", "CAT", "🐈 cat"])
  func labelAsGiven(given: String) async throws {
    let classifier = ImageClassifier(knownImages: [Self.cat: given])

    let outcome = await Result {
      try await withDeadline(.seconds(2), "classify(_:using:)", hint: Self.successHint) {
        try await classify(Self.cat, using: classifier)
      }
    }
    #expect(
      (try? outcome.get()) == given,
      Comment(
        rawValue: "the classifier labelled the image \(given.debugDescription), and "
          + "classify(_:using:) gave \(outcome): the label is the classifier's answer, whatever "
          + "it looks like, so it is passed on as it came; judging it (blank, padded, case) is "
          + "the caller's business, and an error the classifier never reported tells the "
          + "caller something untrue"))
  }

  @Test("Asks the classifier exactly once per call", arguments: scripts)
  func asksOnce(script: CallbackScript) async throws {
    let classifier = Self.makeClassifier(script: script)

    _ = try await withDeadline(.seconds(2), "classify(_:using:)", hint: Self.successHint) {
      try await classify(Self.cat, using: classifier)
    }

    #expect(
      classifier.requestCount == 1,
      "classify(_:using:) asked the classifier \(classifier.requestCount) times for one image")
  }

  @Test(
    "Leaves every image to the classifier, even one it cannot read",
    arguments: [(Data(), ClassificationError.unreadableImage), (zebra, .unrecognised)])
  func asksAboutEveryImage(image: Data, expected: ClassificationError) async throws {
    let classifier = Self.makeClassifier(script: .default)

    await Self.expectClassifierError(expected) {
      try await classify(image, using: classifier)
    }

    #expect(
      classifier.requestCount == 1,
      """
      classify(_:using:) asked the classifier \(classifier.requestCount) times about an image \
      of \(image.count) bytes: which images it can read is the classifier's decision, so \
      every image must be asked about once, and its answer passed on
      """)
  }

  @Test("Returns while the app's main thread is busy: the label does not need it")
  func doesNotWaitForTheMainThread() async throws {
    let classifier = Self.makeClassifier(script: .default)

    let (label, inTime) = try await withDeadline(
      .seconds(4), "classify(_:using:)", hint: Self.successHint
    ) {
      try await whileTheMainThreadIsBusy { try await classify(Self.cat, using: classifier) }
    }

    #expect(label == "cat")
    #expect(inTime, waitedForTheMainThread("classify(_:using:)"))
  }

  @Test("The same classifier serves a success, then a failure, then a success again")
  func reuse() async throws {
    let classifier = Self.makeClassifier(script: .default)

    let first = try await withDeadline(.seconds(2), "classify(_:using:)", hint: Self.successHint) {
      try await classify(Self.cat, using: classifier)
    }
    await Self.expectClassifierError(.unrecognised) {
      try await classify(Self.zebra, using: classifier)
    }
    let third = try await withDeadline(.seconds(2), "classify(_:using:)", hint: Self.successHint) {
      try await classify(Self.cat, using: classifier)
    }

    #expect(first == "cat")
    #expect(third == "cat")
    #expect(
      classifier.requestCount == 3,
      "three calls should ask the classifier three times, not \(classifier.requestCount)")
  }

  @Test(
    "A call whose task is cancelled while it waits ends once, with the label or CancellationError")
  func cancelledWhileWaiting() async throws {
    let (script, delivered) = countedLater()
    let classifier = Self.makeClassifier(script: script)

    let ending = try await endingOfACallCancelledWhileWaiting(
      "classify(_:using:)", hint: Self.successHint, asked: { classifier.requestCount > 0 },
      answered: { delivered.value > 0 }
    ) {
      try await classify(Self.cat, using: classifier)
    }

    expectAnswerOrCancellation(
      ending, "cat", called: "label", from: "classify(_:using:)",
      while: "the classifier worked")
    #expect(classifier.requestCount == 1)
  }

  @Test("Suspends while a slow classifier works, holding no thread of the pool")
  func slowClassifierHoldsNoThread() async throws {
    let classifier = Self.makeClassifier(script: slowAnswer)

    let label = try await expectHoldsNoThread("classify(_:using:)") {
      try await classify(Self.cat, using: classifier)
    }

    #expect(label == "cat", "classify(_:using:) must return the label the classifier gives")
  }
}
