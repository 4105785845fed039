import Foundation
import Testing
import WorkbookTesting

@testable import Streams

private let endHint =
  "at end of file, availableData is empty: yield the unfinished line if there is one, then "
  + "finish the stream"

/// A pipe that the test writes to, piece by piece, and then closes (end of file).
///
/// Each piece is written only once the reader has read everything before it, so that each
/// arrives in a read of its own, and the pipe is closed only once everything has been read.
/// (On Linux, Foundation sometimes misses the end of file when it arrives together with the
/// last data: its readability handler is never called for it. These tests are not about that
/// bug, so they keep out of its way.)
private struct Feed: Sendable {
  let pipe = Pipe()
  var reader: FileHandle { pipe.fileHandleForReading }

  /// Writes each piece as soon as the one before it has been read, then closes the writing
  /// end unless `close` is false. Runs in the background; await the task to know it is done.
  @discardableResult
  func write(_ pieces: [String], close: Bool = true) -> Task<Void, Never> {
    write(pieces.map { Array($0.utf8) }, close: close)
  }

  @discardableResult
  func write(_ pieces: [[UInt8]], close: Bool = true) -> Task<Void, Never> {
    let writer = pipe.fileHandleForWriting
    let reader = pipe.fileHandleForReading
    return Task {
      for piece in pieces {
        try? writer.write(contentsOf: piece)
        await Feed.waitUntilRead(reader)
      }
      if close { try? writer.close() }
    }
  }

  /// Waits until nothing written is left unread in the pipe, or half a second has passed
  /// (code that never reads must not stall the test).
  private static func waitUntilRead(_ reader: FileHandle) async {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: .milliseconds(500))
    while hasUnreadBytes(reader), clock.now < deadline {
      try? await Task.sleep(for: .milliseconds(1))
    }
    // The handler has read; give it a moment to return before anything else happens.
    try? await Task.sleep(for: .milliseconds(5))
  }

  private static func hasUnreadBytes(_ reader: FileHandle) -> Bool {
    var check = pollfd(fd: reader.fileDescriptor, events: Int16(POLLIN), revents: 0)
    return poll(&check, 1, 0) > 0 && check.revents & Int16(POLLIN) != 0
  }

  /// Every line of a new stream from the reading end, up to the stream's end.
  func lines(sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String] {
    let reader = self.reader
    return try await withDeadline(
      .seconds(2), "the loop over lines(from:)", hint: endHint, sourceLocation: sourceLocation
    ) {
      var seen: [String] = []
      for await line in Streams.lines(from: reader) {
        seen.append(line)
      }
      return seen
    }
  }

  /// Closes both ends, once the test is done with them.
  func dispose() {
    try? pipe.fileHandleForWriting.close()
    try? pipe.fileHandleForReading.close()
  }
}

/// The same text, written in different pieces.
enum Pieces: String, CaseIterable, CustomStringConvertible {
  case allAtOnce = "all at once"
  case inPieces = "in pieces"
  case byteByByte = "byte by byte"

  static let text = "first\n\nsecond line\ncafé\nlast"
  static let lines = ["first", "", "second line", "café", "last"]

  var pieces: [[UInt8]] {
    let bytes = Array(Pieces.text.utf8)
    switch self {
    case .allAtOnce:
      return [bytes]
    case .inPieces:
      // Cuts after "fir", after "first\n", after "second li", and between the two bytes of é.
      let cuts = [3, 6, 16, bytes.firstIndex(of: 0xC3)! + 1]
      return zip([0] + cuts, cuts + [bytes.count]).map { Array(bytes[$0..<$1]) }
    case .byteByByte:
      return bytes.map { [$0] }
    }
  }

  var description: String { rawValue }
}

/// One test at a time: Foundation's readability handlers on Linux share a libdispatch event
/// loop that has been known to crash when many of them are torn down at once.
@Suite("4.4 Reading a pipe", .serialized)
struct ReadingAPipeTests {
  @Test("Yields every line, however the text is cut into reads", arguments: Pieces.allCases)
  func yieldsEveryLine(pieces: Pieces) async throws {
    let feed = Feed()
    defer { feed.dispose() }
    feed.write(pieces.pieces)

    let lines = try await feed.lines()

    #expect(lines == Pieces.lines)
  }

  @Test("Joins a line that arrives in several reads")
  func joinsALineCutIntoReads() async throws {
    let feed = Feed()
    defer { feed.dispose() }
    feed.write(["hel", "lo, wor", "ld\nsee you", " later\n"])

    let lines = try await feed.lines()

    #expect(
      lines == ["hello, world", "see you later"],
      "a read is not a line: keep the bytes after the last line feed for the next read")
  }

  @Test("Keeps empty lines")
  func keepsEmptyLines() async throws {
    let feed = Feed()
    defer { feed.dispose() }
    feed.write(["one\n\n", "\ntwo\n", "\n"])

    let lines = try await feed.lines()

    #expect(
      lines == ["one", "", "", "two", ""],
      because(
        "two line feeds in a row are an empty line; split(separator:) drops them unless told "
          + "omittingEmptySubsequences: false"))
  }

  @Test("Yields the text after the last line feed as the last line")
  func yieldsTheLastLineWithoutALineFeed() async throws {
    let feed = Feed()
    defer { feed.dispose() }
    feed.write(["first\nsec", "ond"])

    let lines = try await feed.lines()

    #expect(
      lines == ["first", "second"],
      "at end of file, the bytes after the last line feed are the last line")
  }

  @Test("Keeps a character whose bytes arrive in two reads whole")
  func keepsACharacterCutInTwo() async throws {
    let feed = Feed()
    defer { feed.dispose() }
    let bytes = Array("crème brûlée\n".utf8)
    let cut = bytes.firstIndex(of: 0xC3)! + 1  // between the two bytes of è
    feed.write([Array(bytes[..<cut]), Array(bytes[cut...])])

    let lines = try await feed.lines()

    #expect(
      lines == ["crème brûlée"],
      "decode whole lines, not each read: a read can end in the middle of a character")
  }

  @Test("Ends the stream at end of file, and removes the handler", arguments: [[], ["one\n"]])
  func endsAtEndOfFile(pieces: [String]) async throws {
    let feed = Feed()
    defer { feed.dispose() }
    feed.write(pieces)

    let lines = try await feed.lines()
    let removed = await eventually { feed.reader.readabilityHandler == nil }

    #expect(lines == pieces.map { String($0.dropLast()) })
    #expect(removed, "the readabilityHandler must be removed once the stream has ended")
  }

  @Test("Removes the handler when the loop breaks before end of file")
  func removesTheHandlerWhenTheLoopBreaks() async throws {
    let feed = Feed()
    defer { feed.dispose() }
    let writing = feed.write(["one\ntwo\n"], close: false)
    let reader = feed.reader

    let line = try await withDeadline(
      .seconds(2), "the loop over lines(from:)", hint: "yield each complete line"
    ) { () -> String? in
      for await line in lines(from: reader) {
        return line
      }
      return nil
    }
    let removed = await eventually { reader.readabilityHandler == nil }
    await writing.value

    #expect(line == "one")
    #expect(
      removed,
      because(
        "the readabilityHandler is still set after the loop ended: remove it in the "
          + "continuation's onTermination"))
  }

  @Test("Removes the handler when the task iterating is cancelled")
  func removesTheHandlerWhenTheTaskIsCancelled() async throws {
    let feed = Feed()
    defer { feed.dispose() }
    let reader = feed.reader
    let stream = lines(from: reader)
    let received = Recorder(0)
    let task = Task {
      for await _ in stream {
        received.update { $0 += 1 }
      }
    }
    defer { task.cancel() }
    let writing = feed.write(["one\n"], close: false)

    let arrived = await eventually { received.value == 1 }
    try #require(arrived, "the first line did not arrive: yield each complete line")
    task.cancel()
    try await withDeadline(.seconds(2), "the cancelled loop over lines(from:)") {
      await task.value
    }
    let removed = await eventually { reader.readabilityHandler == nil }
    await writing.value

    #expect(
      removed,
      because(
        "the readabilityHandler is still set after the task was cancelled: remove it in the "
          + "continuation's onTermination"))
  }
}
