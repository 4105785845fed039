import Foundation
import LegacyKit
import Testing
import WorkbookTesting

@testable import Callbacks

/// The contract of the nested download (image, then its metadata): each path, what the
/// caller sees, and the test that checks it (— where a column does not apply, and why).
///
/// | path | result, error | requests (order, count) | thread, timing |
/// | --- | --- | --- | --- |
/// | both arrive (each inside the call, soon, later) | the image with its metadata: `returnsBoth` | — | any thread, any mix: `returnsBoth` |
/// | metadata asked for | — | only after the image has arrived: `metadataAfterImage` | — |
/// | image fails | `imageUnavailable`: `imageFails` | the metadata never asked for: `imageFails` | — |
/// | metadata fails | `metadataUnavailable`: `metadataFails` | asked for once: `oneRequestPerPartPerCall` | — |
/// | the same item twice | the item each time | each part asked for again: `oneRequestPerPartPerCall` | — |
/// | answers on the caller's own thread, late | both parts: `suspendsWhileWaiting` | — | suspends for each, neither blocks nor polls: `suspendsWhileWaiting` |
/// | another item after a failure | its image and metadata: `reuse` | — | — |
/// | an image that failed before, now there (another downloader) | the item: `aFailureIsNotRemembered` | both parts asked for: `aFailureIsNotRemembered` | — |
/// | an empty image (zero bytes) with its metadata | the item, its image empty: `emptyImageIsAnImage` | the metadata asked for: `emptyImageIsAnImage` | — |
/// | image and metadata 2.5 s late each | the item, however late (no time limit of its own): `slowDownloaderHoldsNoThread` | — | holds no thread of the pool while it waits, in any task: `slowDownloaderHoldsNoThread` |
/// | never answered | — the downloader answers every request once; a continuation never resumed fails every test's deadline | | |
/// | two calls at once | — each call has continuations of its own and shares nothing but the downloader | | |
/// | cancelled while the image is on its way | the item or `CancellationError`, once, and nothing more when the image comes: `cancelledWhileWaiting` | — | — |
/// | cancelled before, after | — as "while it waits": the downloader cannot cancel, so nothing differs | | |
@Suite("1.4 Nested callbacks")
struct NestedCallbacksTests {
  static let sunset = URL(string: "https://images.example/sunset.png")!
  static let untitled = URL(string: "https://images.example/untitled.png")!
  static let missing = URL(string: "https://images.example/missing.png")!

  static let sunsetBytes = Data("pretend these are PNG bytes".utf8)
  static let sunsetMetadata = ImageMetadata(width: 640, height: 480, caption: "Sunset")

  /// `sunset` has both parts, `untitled` has no metadata, `missing` is not there at all.
  static let catalogue: [URL: ImageDownloader.Entry] = [
    sunset: .init(image: sunsetBytes, metadata: sunsetMetadata),
    untitled: .init(image: Data("more bytes".utf8), metadata: nil),
  ]

  /// (image script, metadata script): every mix of "inside the call" and "later, elsewhere".
  static let scriptPairs: [(CallbackScript, CallbackScript)] = [
    (.synchronously, .synchronously),
    (.default, .default),
    (.later(.milliseconds(100)), .synchronously),
    (.synchronously, .later(.milliseconds(100))),
  ]
  static let scripts: [CallbackScript] = [.synchronously, .default, .later(.milliseconds(100))]

  static let name = "loadGalleryItem(_:from:)"
  static let hint =
    "one of the two continuations is not resumed on every path; each handler must resume "
    + "with both success and failure"

  @Test("Returns the image together with its metadata", arguments: scriptPairs)
  func returnsBoth(imageScript: CallbackScript, metadataScript: CallbackScript) async throws {
    let downloader = ImageDownloader(
      catalogue: Self.catalogue, imageScript: imageScript, metadataScript: metadataScript)

    let item = try await withDeadline(.seconds(2), Self.name, hint: Self.hint) {
      try await loadGalleryItem(Self.sunset, from: downloader)
    }

    #expect(item == GalleryItem(image: Self.sunsetBytes, metadata: Self.sunsetMetadata))
  }

  @Test("Asks for the metadata only after the image has arrived")
  func metadataAfterImage() async throws {
    // The image takes its time, so metadata asked for in parallel would be requested first.
    let downloader = ImageDownloader(
      catalogue: Self.catalogue, imageScript: .later(.milliseconds(300)),
      metadataScript: .default)

    _ = try await withDeadline(.seconds(2), Self.name, hint: Self.hint) {
      try await loadGalleryItem(Self.sunset, from: downloader)
    }

    #expect(
      downloader.events == [
        .imageRequested(Self.sunset), .imageDelivered(Self.sunset),
        .metadataRequested(Self.sunset), .metadataDelivered(Self.sunset),
      ],
      downloader.events.isEmpty
        ? """
        this downloader was never asked for anything, and the call still returned an item: \
        it came from an earlier call (or another downloader); each call asks its downloader \
        for the image, then the metadata: nothing is kept from one call to the next
        """
        : """
        the metadata was requested before the image arrived (in parallel): await the image \
        first, then ask for the metadata
        """)
  }

  @Test(
    "A failed image download throws imageUnavailable and never asks for the metadata",
    arguments: scripts)
  func imageFails(script: CallbackScript) async throws {
    let downloader = ImageDownloader(
      catalogue: Self.catalogue, imageScript: script, metadataScript: script)

    await Self.expectGalleryError(
      .imageUnavailable, cause: { Self.afterAFailedImage(downloader.events) }
    ) {
      try await loadGalleryItem(Self.missing, from: downloader)
    }
    #expect(
      downloader.events == [.imageRequested(Self.missing), .imageDelivered(Self.missing)],
      Comment(
        rawValue: Self.afterAFailedImage(downloader.events)
          ?? "the downloads were \(downloader.events), not one image request"))
  }

  /// What went wrong, read from the downloader's events, when a failed image was not the
  /// end of the call; `nil` when the image was asked for once and nothing else was.
  static func afterAFailedImage(_ events: [ImageDownloader.Event]) -> String? {
    let imageRequests = events.filter { if case .imageRequested = $0 { true } else { false } }
    let metadataAsked = events.contains { if case .metadataRequested = $0 { true } else { false } }
    if imageRequests.isEmpty {
      return """
        this downloader was never asked for the image, and the call still ended: a failure \
        remembered from an earlier call (or another downloader) answered in its place; each \
        call asks its downloader anew, and keeps nothing for the next one
        """
    }
    if imageRequests.count > 1 {
      return """
        the image was requested \(imageRequests.count) times for one call: a failed download \
        is the step's answer, to be thrown as GalleryError.imageUnavailable, not a reason to \
        try again
        """
    }
    guard metadataAsked else { return nil }
    let failedFirst = events.firstIndex(of: .imageDelivered(Self.missing)).map { delivered in
      events.firstIndex { if case .metadataRequested = $0 { true } else { false } }! > delivered
    }
    return failedFirst == true
      ? """
      the image download failed, and loadGalleryItem(_:from:) still went on to ask for the \
      metadata (a placeholder image, or an error caught and set aside?): a failed image \
      ends the call with GalleryError.imageUnavailable, and the metadata is never asked for
      """
      : """
      the metadata was requested before the image had arrived (in parallel, or first), so \
      it was asked for although the image then failed: ask for the metadata only after the \
      image has arrived
      """
  }

  @Test("A failed metadata download throws metadataUnavailable", arguments: scripts)
  func metadataFails(script: CallbackScript) async throws {
    let downloader = ImageDownloader(
      catalogue: Self.catalogue, imageScript: script, metadataScript: script)

    await Self.expectGalleryError(.metadataUnavailable) {
      try await loadGalleryItem(Self.untitled, from: downloader)
    }
  }

  /// Checks that `operation` throws `expected`, naming the step that failed.
  /// `cause`, when it returns a text, explains a wrong outcome better than the error alone
  /// (what the downloader saw).
  static func expectGalleryError(
    _ expected: GalleryError, cause: @escaping @Sendable () -> String? = { nil },
    sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable () async throws -> GalleryItem
  ) async {
    let step = expected == .imageUnavailable ? "image" : "metadata"
    await expectThrows(
      expected, from: name, hint: hint,
      returned: { _ in
        cause()
          ?? "loadGalleryItem(_:from:) returned an item although the \(step) download failed: "
          + "throw GalleryError.\(expected) instead of a placeholder"
      },
      wrongError: { error in
        cause()
          ?? "the \(step) step failed, so loadGalleryItem(_:from:) must throw "
          + "GalleryError.\(expected), not \(error): map each step's error to its own case"
      },
      sourceLocation: sourceLocation, operation)
  }

  @Test("Suspends while it waits for each part, so answers on its own thread can arrive")
  func suspendsWhileWaiting() async throws {
    let executor = OneThreadExecutor()
    let downloader = ImageDownloader(
      catalogue: Self.catalogue, imageScript: lateOnThreadOf(executor),
      metadataScript: lateOnThreadOf(executor))

    let item = try await expectSuspends(Self.name, hint: Self.hint, waits: 2, on: executor) {
      try await loadGalleryItem(Self.sunset, from: downloader)
    }

    #expect(item == GalleryItem(image: Self.sunsetBytes, metadata: Self.sunsetMetadata))
  }

  @Test("The same downloader loads another item after a failure")
  func reuse() async throws {
    let downloader = ImageDownloader(catalogue: Self.catalogue)

    await Self.expectGalleryError(.imageUnavailable) {
      try await loadGalleryItem(Self.missing, from: downloader)
    }
    let item = try await withDeadline(.seconds(2), Self.name, hint: Self.hint) {
      try await loadGalleryItem(Self.sunset, from: downloader)
    }

    #expect(item == GalleryItem(image: Self.sunsetBytes, metadata: Self.sunsetMetadata))
  }

  @Test(
    "A call whose task is cancelled while it waits ends once, with the item or CancellationError")
  func cancelledWhileWaiting() async throws {
    let (imageScript, delivered) = countedLater()
    let downloader = ImageDownloader(catalogue: Self.catalogue, imageScript: imageScript)

    let ending = try await endingOfACallCancelledWhileWaiting(
      Self.name, hint: Self.hint, asked: { !downloader.events.isEmpty },
      answered: { delivered.value > 0 }
    ) {
      try await loadGalleryItem(Self.sunset, from: downloader)
    }

    expectAnswerOrCancellation(
      ending, GalleryItem(image: Self.sunsetBytes, metadata: Self.sunsetMetadata),
      called: "item", from: Self.name, while: "the image was on its way")
  }

  @Test("Suspends while a slow downloader works, holding no thread of the pool")
  func slowDownloaderHoldsNoThread() async throws {
    let downloader = ImageDownloader(
      catalogue: Self.catalogue, imageScript: slowAnswer, metadataScript: slowAnswer)

    // How the call ended is judged here, not by the pool check: an error thrown after a
    // slow answer says nothing about a held thread.
    let outcome = try await expectHoldsNoThread(Self.name) {
      await Result { try await loadGalleryItem(Self.sunset, from: downloader) }
    }

    guard case .success(let item) = outcome else {
      Issue.record(
        Comment(
          rawValue: "this downloader answers each request 2.5 s late, with the image and "
            + "then its metadata, and loadGalleryItem(_:from:) \(outcome.described) (the "
            + "downloader's events by then: \(downloader.events.map(\.description))): a late "
            + "answer is still the answer, so each step waits for the downloader however long "
            + "it takes (no time limit of its own), and only a failed download is unavailable"))
      return
    }
    #expect(item == GalleryItem(image: Self.sunsetBytes, metadata: Self.sunsetMetadata))
  }

  @Test("Each call asks for each part once: again for the same item, once for one that fails")
  func oneRequestPerPartPerCall() async throws {
    let downloader = ImageDownloader(catalogue: Self.catalogue)
    for _ in 1...2 {
      _ = try await withDeadline(.seconds(2), Self.name, hint: Self.hint) {
        try await loadGalleryItem(Self.sunset, from: downloader)
      }
    }
    let failing = ImageDownloader(catalogue: Self.catalogue)
    await Self.expectGalleryError(.metadataUnavailable) {
      try await loadGalleryItem(Self.untitled, from: failing)
    }

    func requests(_ downloader: ImageDownloader) -> [ImageDownloader.Event] {
      downloader.events.filter {
        switch $0 {
        case .imageRequested, .metadataRequested: true
        case .imageDelivered, .metadataDelivered: false
        }
      }
    }
    let twice = requests(downloader)
    #expect(
      twice == [
        .imageRequested(Self.sunset), .metadataRequested(Self.sunset),
        .imageRequested(Self.sunset), .metadataRequested(Self.sunset),
      ],
      Comment(
        rawValue: "the same item loaded twice made these requests: \(twice.map(\.description)); "
          + "each call asks the downloader for its image and then its metadata: the server may "
          + "have changed them, so nothing is kept from one call to the next"))
    let once = requests(failing)
    #expect(
      once == [.imageRequested(Self.untitled), .metadataRequested(Self.untitled)],
      Comment(
        rawValue: "a load whose metadata failed made these requests: \(once.map(\.description)); "
          + "ask for each part once: a failure is the answer, to throw, not a reason to ask again"))
  }

  @Test("An image that failed once is asked for again by the next call, and comes")
  func aFailureIsNotRemembered() async throws {
    // A URL of its own, so nothing another test did can stand in the way.
    let url = URL(string: "https://images.example/\(UUID().uuidString).png")!
    let empty = ImageDownloader(catalogue: [:])
    await Self.expectGalleryError(.imageUnavailable) {
      try await loadGalleryItem(url, from: empty)
    }

    let stocked = ImageDownloader(
      catalogue: [url: .init(image: Self.sunsetBytes, metadata: Self.sunsetMetadata)])
    let outcome = try await withDeadline(.seconds(2), Self.name, hint: Self.hint) {
      await Result { try await loadGalleryItem(url, from: stocked) }
    }

    #expect(
      (try? outcome.get()) == GalleryItem(image: Self.sunsetBytes, metadata: Self.sunsetMetadata),
      Comment(
        rawValue: stocked.events.isEmpty
          ? "a second call failed without asking the downloader: a failed image was "
            + "remembered from an earlier call, so an image that is there now never loads; "
            + "each call asks anew, and keeps nothing"
          : "the image is there now, and the second call ended with \(outcome): a failure "
            + "belongs to the call it happened in"))
  }

  @Test("An empty image is an image: it comes with its metadata")
  func emptyImageIsAnImage() async throws {
    let blank = URL(string: "https://images.example/blank.png")!
    let metadata = ImageMetadata(width: 0, height: 0, caption: "Blank")
    let downloader = ImageDownloader(catalogue: [blank: .init(image: Data(), metadata: metadata)])

    let outcome = try await withDeadline(.seconds(2), Self.name, hint: Self.hint) {
      await Result { try await loadGalleryItem(blank, from: downloader) }
    }

    #expect(
      (try? outcome.get()) == GalleryItem(image: Data(), metadata: metadata),
      Comment(
        rawValue: "the image download succeeded with zero bytes, and loadGalleryItem(_:from:) "
          + "ended with \(outcome): an image that arrives is the image, whatever its size; "
          + "only a failed download is imageUnavailable"))
  }
}
