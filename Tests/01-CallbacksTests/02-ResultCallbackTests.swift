import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import Callbacks

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

    let label = try await withDeadline(.seconds(2), "classify(_:using:)", hint: Self.successHint) {
      try await classify(Self.cat, using: classifier)
    }

    #expect(label == "cat")
  }

  @Test(
    "Throws the classifier's error when it cannot label the image",
    arguments: [ClassificationError.unrecognised, .unreadableImage], scripts)
  func throwsTheError(expected: ClassificationError, script: CallbackScript) async throws {
    let classifier = Self.makeClassifier(script: script)
    let image = expected == .unreadableImage ? Data() : Self.zebra

    await Self.expectClassifierError(expected) {
      try await classify(image, using: classifier)
    }
  }

  /// Checks that `operation` throws the classifier's own `expected` error.
  static func expectClassifierError(
    _ expected: ClassificationError, sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable () async throws -> String
  ) async {
    await expectThrows(
      expected, from: "classify(_:using:)", hint: failureHint,
      returned: { label in
        "classify(_:using:) returned \"\(label)\" although the classifier reported "
          + "\(expected): on .failure, throw the classifier's error instead of returning a label"
      },
      wrongError: { error in
        "classify(_:using:) threw \(error), not the classifier's own error \(expected): "
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
}
