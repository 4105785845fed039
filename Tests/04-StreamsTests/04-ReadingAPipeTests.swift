import Foundation
import Synchronization
import Testing
import WorkbookTesting

@testable import Streams

private let endHint =
  "at end of file, availableData is empty: yield the unfinished line if there is one, then "
  + "finish the stream"

/// Every pipe the tests make. They stay here until the test process ends, so that no file
/// descriptor is closed behind the tests' back (see ``Feed``).
private let everyPipe = Mutex<[Pipe]>([])

/// A pipe that the test writes to, piece by piece, and then closes (end of file).
///
/// Foundation and libdispatch on Linux have known bugs with readability handlers, and these
/// tests, which are not about them, keep out of their way:
/// - the end of file is sometimes missed when it arrives together with the last data (the
///   handler is never called for it), so each piece is written once everything before it has
///   been read, and the pipe is closed once everything has been read;
/// - libdispatch has been seen to crash when the end of file arrives while it is still setting
///   up a handler's read source, or when file descriptors are closed and reused while it is
///   still tearing one down; so the stream is made a moment before anything is written, and a
///   pipe is closed only a moment after its stream has ended.
private struct Feed: Sendable {
  let pipe = Pipe()
  var reader: FileHandle { pipe.fileHandleForReading }

  init() {
    everyPipe.withLock { [pipe] in $0.append(pipe) }
  }

  /// What one stream made of the pipe.
  struct Reading {
    /// Every line, up to the stream's end.
    var lines: [String]
    /// Whether the readability handler was removed once the stream had ended.
    var handlerRemoved: Bool
  }

  /// Makes a stream from the reading end, writes `pieces` and closes the pipe, reads the
  /// stream to its end, and closes the reading end too.
  func read(
    _ pieces: [String], sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> Reading {
    try await read(pieces.map { Array($0.utf8) }, sourceLocation: sourceLocation)
  }

  func read(
    _ pieces: [[UInt8]], sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> Reading {
    let reader = self.reader
    let lines = try await withDeadline(
      .seconds(2), "the loop over lines(from:)", hint: endHint, sourceLocation: sourceLocation
    ) {
      var seen: [String] = []
      let stream = Streams.lines(from: reader)
      write(pieces)
      for await line in stream {
        seen.append(line)
      }
      return seen
    }
    let removed = await eventually(within: .milliseconds(500)) {
      reader.readabilityHandler == nil
    }
    await close()
    return Reading(lines: lines, handlerRemoved: removed)
  }

  /// Writes each piece as soon as the one before it has been read, then closes the writing
  /// end unless `close` is false. Runs in the background; call it once the stream is made.
  @discardableResult
  func write(_ pieces: [String], close: Bool = true) -> Task<Void, Never> {
    write(pieces.map { Array($0.utf8) }, close: close)
  }

  @discardableResult
  func write(_ pieces: [[UInt8]], close: Bool = true) -> Task<Void, Never> {
    let writer = pipe.fileHandleForWriting
    let reader = pipe.fileHandleForReading
    return Task {
      // Let the reader's handler settle in before anything arrives.
      try? await Task.sleep(for: .milliseconds(10))
      for piece in pieces {
        try? writer.write(contentsOf: piece)
        await Feed.waitUntilRead(reader)
      }
      if close { try? writer.close() }
    }
  }

  /// Closes both ends, a moment after the stream has ended. A handler the code under test
  /// left set (a finding of the test's own) is removed first: libdispatch on Linux crashes
  /// when a descriptor it still watches is closed.
  func close() async {
    if reader.readabilityHandler != nil {
      reader.readabilityHandler = nil
      try? await Task.sleep(for: .milliseconds(100))
    }
    try? await Task.sleep(for: .milliseconds(50))
    try? pipe.fileHandleForWriting.close()
    try? pipe.fileHandleForReading.close()
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
}

/// A file handle whose reads the test scripts: each call of its readability handler finds
/// the next piece in `availableData`, then an empty read, the end of file. No descriptor and
/// no dispatch source are involved, so a test can change the timing of tasks around the
/// handler without meeting libdispatch's bugs with real pipes on Linux (see ``Feed``).
private final class ScriptedHandle: FileHandle, @unchecked Sendable {
  private struct State {
    var handler: (@Sendable (FileHandle) -> Void)?
    var next = Data()
  }
  private let state = Mutex(State())
  private let queue = DispatchQueue(label: "ScriptedHandle")

  init() {
    super.init(fileDescriptor: -1, closeOnDealloc: false)
  }

  required init?(coder: NSCoder) { nil }

  override var readabilityHandler: (@Sendable (FileHandle) -> Void)? {
    get { state.withLock { $0.handler } }
    set { state.withLock { $0.handler = newValue } }
  }

  override var availableData: Data {
    state.withLock { state in
      defer { state.next = Data() }
      return state.next
    }
  }

  /// Calls the handler once per piece, then once for the end of file, one call after
  /// another on the handle's queue, while a handler is set.
  func deliver(_ pieces: [Data]) {
    queue.async {
      for piece in pieces + [Data()] {
        guard
          let handler = self.state.withLock({ state -> (@Sendable (FileHandle) -> Void)? in
            state.next = piece
            return state.handler
          })
        else { return }
        handler(self)
      }
    }
  }

  /// Calls the handler once per piece, and once for the end of file if `end`, on the
  /// calling thread, before returning.
  func deliverNow(_ pieces: [Data], end: Bool) {
    for piece in pieces + (end ? [Data()] : []) {
      guard
        let handler = state.withLock({ state -> (@Sendable (FileHandle) -> Void)? in
          state.next = piece
          return state.handler
        })
      else { return }
      handler(self)
    }
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

/// The contract of `lines(from:)`: each path, what the loop and the file handle see, and the
/// test that checks it (— where a column does not apply, and why).
///
/// | path | lines (count, order, content) | end | readability handler | thread, timing |
/// | --- | --- | --- | --- | --- |
/// | text read to end of file | every line, however it is cut into reads: `yieldsEveryLine`; in the order of the reads, even when tasks started on their thread run backwards: `keepsTheOrderOfReads`; a line across reads: `joinsALineCutIntoReads`; empty lines: `keepsEmptyLines`; a character cut in two: `keepsACharacterCutInTwo`; spaces and tabs kept: `keepsLinesAsWritten` (a carriage return before the line feed is left open: dropping it is what many line readers do) | at end of file: `endsAtEndOfFile`; the text after the last line feed first: `yieldsTheLastLineWithoutALineFeed` | removed: `endsAtEndOfFile` | — reads arrive on Dispatch's threads, as the real handle calls |
/// | 300 lines in one read, a slow loop | all of them: `everyLineOfABigRead` | — | — | — |
/// | the loop breaks before end of file | — | — | removed: `removesTheHandlerWhenTheLoopBreaks` | — |
/// | the task is cancelled | — | the loop ends: `removesTheHandlerWhenTheTaskIsCancelled` | removed: `removesTheHandlerWhenTheTaskIsCancelled` | — |
/// | the stream is dropped unread | — | — | removed: `removesTheHandlerWhenTheStreamIsDropped` | — |
/// | a read error | — the handler reports none: an empty read is the end of file | | | |
/// | two handles read at once | each its own lines, unfinished ones kept apart: `twoHandlesAtOnce` | — | — | — |
/// | a second stream on one handle | — a handle has one readability handler: one stream at a time | | | |
///
/// One test at a time: Foundation's readability handlers on Linux share a libdispatch event
/// loop that has been known to crash when many of them are torn down at once.
///
/// Skipped under Thread Sanitizer (`make tsan`): there, libdispatch's event thread crashed
/// (SEGV in `_dispatch_event_loop_drain`) in two of six runs while these tests opened and
/// closed pipes with readability handlers: the libdispatch bug described at `Feed` above,
/// which the sanitizer's timing provokes. The crash is in the toolchain's library, not in the
/// workbook's code; everywhere else the suite runs as usual.
@Suite(
  "4.4 Reading a pipe", .serialized,
  .disabled(
    if: underThreadSanitizer,
    "under Thread Sanitizer libdispatch crashes in its event loop while pipes are read (see the comment)"
  ))
struct ReadingAPipeTests {
  @Test("Ends the stream at end of file, and removes the handler")
  func endsAtEndOfFile() async throws {
    let feed = Feed()
    let reading = try await feed.read(["one\n", "two\n"])

    #expect(reading.lines == ["one", "two"])
    #expect(
      reading.handlerRemoved, "the readabilityHandler must be removed once the stream has ended")
  }

  @Test("Joins a line that arrives in several reads")
  func joinsALineCutIntoReads() async throws {
    let feed = Feed()
    let lines = try await feed.read(["hel", "lo, wor", "ld\nsee you", " later\n"]).lines

    #expect(
      lines == ["hello, world", "see you later"],
      Comment(
        rawValue: lines == ["hello, world", "see you later", ""]
          ? "an input that ends with a line feed got an extra empty line at the end: at the end "
            + "of the input, only bytes left after the last line feed make one more line"
          : "a read is not a line: keep the bytes after the last line feed for the next read"))
  }

  @Test("Keeps the order of the reads even when tasks started on the reads' thread run backwards")
  func keepsTheOrderOfReads() async throws {
    let sent = ["one", "two", "three", "four", "five", "six"]
    let handle = ScriptedHandle()
    // Six reads and the end of file come one handler call after another on one queue, as a
    // real handle calls; tasks started there are held and run backwards, as a busy machine
    // may run them: only an order the stream keeps itself, in the handler, survives.
    let lines = try await withPlainThreadJobsReordered(window: .milliseconds(30)) {
      try await withDeadline(.seconds(2), "the loop over lines(from:)", hint: endHint) {
        var seen: [String] = []
        let stream = Streams.lines(from: handle)
        handle.deliver(sent.map { Data(($0 + "\n").utf8) })
        for await line in stream { seen.append(line) }
        return seen
      }
    }
    // Some lines, none out of order: lost on the way, not overtaken.
    let droppedInOrder =
      !lines.isEmpty && lines.count < sent.count && lines == sent.filter(lines.contains)
    #expect(
      lines == sent,
      Comment(
        rawValue: droppedInOrder
          ? "six lines came in six reads, one after the other, and the loop got only \(lines), "
            + "in order: the others were thrown away before the loop took them (a stream that "
            + "buffers only some of its elements), or the end came before they were yielded"
          : "six lines came in six reads, one after the other, and the loop got \(lines): "
            + "something handed each read, or the end of file, to a task of its own, and tasks "
            + "run in no promised order; a later read overtook an earlier one, or the end came "
            + "before the last lines"))
  }

  @Test("Two handles read at once keep their unfinished lines apart")
  func twoHandlesAtOnce() async throws {
    let first = ScriptedHandle()
    let second = ScriptedHandle()
    let firstLines = Streams.lines(from: first)
    let secondLines = Streams.lines(from: second)
    first.deliverNow([Data("ab".utf8)], end: false)  // A line the first has not finished,
    second.deliverNow([Data("cd\n".utf8)], end: true)  // a whole one in the second,
    first.deliverNow([Data("c\n".utf8)], end: true)  // and the rest of the first's.

    let (one, two) = try await withDeadline(
      .seconds(2), "two loops over lines(from:)", hint: endHint
    ) {
      var one: [String] = []
      var two: [String] = []
      for await line in firstLines { one.append(line) }
      for await line in secondLines { two.append(line) }
      return (one, two)
    }
    #expect(
      one == ["abc"] && two == ["cd"],
      "two handles read at once: the first sent \"ab\" then \"c\\n\", the second \"cd\\n\" in between, and the streams gave \(one) and \(two), not [\"abc\"] and [\"cd\"]: each stream keeps its own unfinished line; bytes kept anywhere two streams share mix their lines"
    )
  }

  @Test("Keeps empty lines")
  func keepsEmptyLines() async throws {
    let feed = Feed()
    let lines = try await feed.read(["one\n\n", "\ntwo\n", "\n"]).lines

    let withLineFeeds = lines.filter { $0.contains("\n") }
    #expect(
      lines == ["one", "", "", "two", ""],
      because(
        withLineFeeds.isEmpty
          ? "two line feeds in a row are an empty line; split(separator:) drops them unless "
            + "told omittingEmptySubsequences: false"
          : "the loop got \(withLineFeeds) as a line, line feeds and all: a read that brings "
            + "several line feeds holds several lines, and every one up to the last line feed "
            + "must be yielded; these stayed behind in the buffer until end of file"))
  }

  @Test("Keeps each line as it was written, its spaces and tabs included")
  func keepsLinesAsWritten() async throws {
    let feed = Feed()
    let written = ["  indented", "trailing \t", "\tcolumn\tseparated", " "]
    let lines = try await feed.read([written.joined(separator: "\n") + "\n"]).lines

    #expect(
      lines == written,
      """
      the lines written were \(written) and the loop got \(lines): a line is every byte up \
      to its line feed, unchanged; trimming spaces or tabs changes what \
      the process wrote (a column in a table, an indented block, a line that is one space)
      """)
  }

  @Test("Yields the text after the last line feed as the last line")
  func yieldsTheLastLineWithoutALineFeed() async throws {
    let feed = Feed()
    let lines = try await feed.read(["first\nsec", "ond"]).lines

    #expect(
      lines == ["first", "second"],
      "at end of file, the bytes after the last line feed are the last line")
  }

  @Test("Keeps a character whose bytes arrive in two reads whole")
  func keepsACharacterCutInTwo() async throws {
    let feed = Feed()
    let bytes = Array("crème brûlée\n".utf8)
    let cut = bytes.firstIndex(of: 0xC3)! + 1  // between the two bytes of è
    let lines = try await feed.read([Array(bytes[..<cut]), Array(bytes[cut...])]).lines

    #expect(
      lines == ["crème brûlée"],
      "decode whole lines, not each read: a read can end in the middle of a character")
  }

  @Test("Yields every line, however the text is cut into reads", arguments: Pieces.allCases)
  func yieldsEveryLine(pieces: Pieces) async throws {
    let feed = Feed()
    let lines = try await feed.read(pieces.pieces).lines

    #expect(lines == Pieces.lines)
  }

  @Test("Removes the handler when the loop breaks before end of file")
  func removesTheHandlerWhenTheLoopBreaks() async throws {
    let feed = Feed()
    let reader = feed.reader

    let line = try await withDeadline(
      .seconds(2), "the loop over lines(from:)",
      hint: "yield each complete line as soon as its line feed has been read, without waiting "
        + "for the end of file"
    ) { () -> String? in
      let stream = lines(from: reader)
      feed.write(["one\ntwo\n"], close: false)
      for await line in stream {
        return line
      }
      return nil
    }
    let removed = await eventually { reader.readabilityHandler == nil }
    await feed.close()

    #expect(line == "one")
    #expect(
      removed,
      because(
        "the readabilityHandler is still set after the loop ended: remove it in the "
          + "continuation's onTermination"))
  }

  @Test("Removes the handler when the stream is dropped without being iterated")
  func removesTheHandlerWhenTheStreamIsDropped() async throws {
    let feed = Feed()
    let reader = feed.reader

    do {
      // Made and let go at once, as a screen that closes before its loop starts does.
      _ = lines(from: reader)
    }
    let removed = await eventually { reader.readabilityHandler == nil }
    await feed.close()

    #expect(
      removed,
      because(
        "a stream nobody iterates was dropped, and the readabilityHandler is still set: the "
          + "handle keeps reading, and keeps everything the handler holds, for nobody. "
          + "Dropping a stream ends it too: remove it in the continuation's onTermination"))
  }

  @Test("Removes the handler when the task iterating is cancelled")
  func removesTheHandlerWhenTheTaskIsCancelled() async throws {
    let feed = Feed()
    let reader = feed.reader
    let stream = lines(from: reader)
    let received = Locked(0)
    let task = Task {
      for await _ in stream {
        received.withLock { $0 += 1 }
      }
    }
    defer { task.cancel() }
    feed.write(["one\n"], close: false)

    let arrived = await eventually { received.value == 1 }
    try #require(arrived, "the first line did not arrive: yield each complete line")
    task.cancel()
    try await withDeadline(
      .seconds(2), "the cancelled loop over lines(from:)",
      hint: "a cancelled loop over an AsyncStream ends by itself; is the readability handler "
        + "blocking?"
    ) {
      await task.value
    }
    let removed = await eventually { reader.readabilityHandler == nil }
    await feed.close()

    #expect(
      removed,
      because(
        "the readabilityHandler is still set after the task was cancelled: remove it in the "
          + "continuation's onTermination"))
  }

  @Test("A slow loop gets every one of 300 lines that arrive in one read")
  func everyLineOfABigRead() async throws {
    let expected = (1...300).map { "line \($0)" }
    let feed = Feed()
    // One write, so one read hands the handler all 300 lines at once, faster than any loop
    // can take them.
    let lines = try await feed.read([expected.map { $0 + "\n" }.joined()]).lines
    // A line that is not one of these, or a line twice: the other tests say what is wrong.
    guard Set(lines).isSubset(of: expected), Set(lines).count == lines.count else { return }

    #expect(
      lines == expected,
      """
      300 lines arrived in one read and the loop got \(lines.count) of them: the stream \
      promises every line of the output, in order, even to a loop that reads slower than the \
      pipe delivers; a log or a parser fed by it silently skips lines
      """)
  }
}
