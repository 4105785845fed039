import Foundation
import Testing
import WorkbookTesting

@testable import Capstone

/// Reads `lines` to its end.
private func all(_ lines: AsyncStream<String>) async -> [String] {
  var received: [String] = []
  for await line in lines { received.append(line) }
  return received
}

/// Records a failure if `input` was read on a thread that must not block.
private func expectOwnThread(
  _ input: ProbedInput, sourceLocation: SourceLocation = #_sourceLocation
) {
  if let mistake = input.misplacedRead {
    Issue.record(Comment(rawValue: mistake), sourceLocation: sourceLocation)
  }
}

/// Writes `text` to a pipe, closes it, and reads `inputLines(from:)` over it to its end,
/// within a deadline; also checks that the reads happened where they may block.
private func linesRead(
  from text: String, sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [String] {
  try await linesAndInput(from: text, sourceLocation: sourceLocation).lines
}

/// Like ``linesRead(from:sourceLocation:)``, and the probed handle the lines came from.
private func linesAndInput(
  from text: String, sourceLocation: SourceLocation = #_sourceLocation
) async throws -> (lines: [String], input: ProbedInput) {
  let pipe = Pipe()
  let input = ProbedInput(pipe)
  let lines = inputLines(from: input)
  if !text.isEmpty { pipe.write(text) }
  try pipe.fileHandleForWriting.close()
  let received = try await readToEnd(lines)
  expectOwnThread(input, sourceLocation: sourceLocation)
  return (received, input)
}

/// `lines` read to their end, within a deadline that names the likely cause.
private func readToEnd(_ lines: AsyncStream<String>) async throws -> [String] {
  try await withDeadline(
    .seconds(2), "reading inputLines(from:) to its end",
    hint: "the stream never finishes: at end of file (an empty read) call finish()"
  ) {
    await all(lines)
  }
}

/// Writes `pieces` to a pipe one by one, each read before the next is written, closes it,
/// and reads `inputLines(from:)` over it to its end, within a deadline; also checks that the
/// reads happened where they may block. Once a piece is not read in time, the input is not
/// being read as it comes (another test says so): `waiting` turns false, and from then on
/// pieces are written without waiting.
private func linesRead(
  inPieces pieces: [[UInt8]], waiting: inout Bool,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [String] {
  let pipe = Pipe()
  let input = ProbedInput(pipe)
  let lines = inputLines(from: input)
  var written = 0
  for piece in pieces {
    pipe.write(bytes: piece)
    written += piece.count
    if waiting {
      waiting = await eventually { input.bytesRead >= written || input.misplacedRead != nil }
    }
  }
  try pipe.fileHandleForWriting.close()
  let received = try await readToEnd(lines)
  expectOwnThread(input, sourceLocation: sourceLocation)
  return received
}

/// The contract of `inputLines(from:)`: each input, what the stream gives, and the test that
/// checks it (— where a column does not apply, and why).
///
/// | input | lines | the end | thread, timing |
/// | --- | --- | --- | --- |
/// | lines ending "\n", an empty line | each, without its "\n"; "" too: `linesThenEnd` | finishes at end of file: `linesThenEnd` | reads on a thread of its own, never the pool or a global queue: every test (`ProbedInput`) |
/// | read on a private serial `DispatchQueue` | — accepted: such a queue runs on an overcommitting root queue, which adds a thread when its threads are busy, so the blocking read takes no thread other work waits for (unlike a global queue or the pool) | | |
/// | "\r\n" endings; a lone "\r" | the "\r" of "\r\n" dropped: `windowsLineEndings`; a lone "\r" kept: `everySplitPoint` | — | — |
/// | a leading "\r", "\r\r\n", U+0085, U+2028, U+2029, vertical tab, form feed | text, kept; only the one "\r" before "\n" goes: `otherLineBreaksAreText` | — | — |
/// | a last line without "\n" | yielded at end of file: `unfinishedLastLine` | then finishes | — |
/// | a last line that ends in a lone "\r" at end of file | — not pinned: the article's rule keeps that "\r" as text (as `readLine()` does), the solution drops it as the start of a "\r\n" that never came; both are reasonable for input cut off there | — | — |
/// | no input | none: `emptyInput` | finishes at once | — |
/// | a line in pieces, a character or "\r\n" split between reads | one line, whole: `linesInPieces`, `splitCharacters`, `everySplitPoint` | — | — |
/// | 500 lines in random pieces | all, in order: `manyLinesInPieces` | — | — |
/// | input still open | each line as it arrives: `linesArriveWhileInputIsOpen` | — | — |
/// | after end of file | — | no more reads: `readingStopsAtEnd` | — |
/// | the consumer stops early | — the reading thread waits in `read` until end of file (harmless for a command about to exit, as the article says) | | |
@Suite("8.4 Input lines")
struct InputLinesTests {
  @Test("Yields every line without its newline, and finishes at end of input")
  func linesThenEnd() async throws {
    let (received, input) = try await linesAndInput(from: "hello\nsecond line\n\nlast\n")
    #expect(
      received == ["hello", "second line", "", "last"],
      Comment(
        rawValue: received.isEmpty && input.readCount == 0
          ? "the stream finished without a line, and inputLines(from:) never asked the handle "
            + "it was given for data (availableData was never called on it): does it read "
            + "another input, such as standard input (readLine())?"
          : received.isEmpty
            ? "the stream finished without a line, although inputLines(from:) read the input "
              + "(\(input.readCount) read(s)): the lines were never yielded, or yielded after "
              + "finish() (a yield made from a task of its own runs later, and a yield after "
              + "finish() is dropped)"
            : "each line, without its newline: an empty line is a line too"))
  }

  @Test("A last line without a newline still counts")
  func unfinishedLastLine() async throws {
    let received = try await linesRead(from: "first\nno newline")
    #expect(
      received == ["first", "no newline"],
      Comment(
        rawValue:
          "the input ended in the middle of a line: at end of file, yield what is left, then "
          + "finish"))
  }

  @Test("\\r\\n line endings lose the \\r")
  func windowsLineEndings() async throws {
    let received = try await linesRead(from: "from windows\r\nand more\r\n")
    #expect(
      received == ["from windows", "and more"],
      "a line ending \"\\r\\n\" must lose its \"\\r\" too")
  }

  @Test("Empty input finishes at once")
  func emptyInput() async throws {
    let received = try await linesRead(from: "")
    #expect(received.isEmpty, "empty input has no lines, not one empty line")
  }

  @Test("Each line arrives as soon as it is typed, long before the end of input")
  func linesArriveWhileInputIsOpen() async throws {
    let pipe = Pipe()
    defer { try? pipe.fileHandleForWriting.close() }
    let input = ProbedInput(pipe)
    let lines = inputLines(from: input)
    let received = Locked<[String]>([])
    let reading = Task { for await line in lines { received.withLock { $0.append(line) } } }
    defer { reading.cancel() }

    pipe.write("first\n")
    await eventually(
      "\"first\" to arrive while the input is still open (yield each line as its newline arrives, do not read to the end first)"
    ) {
      received.value == ["first"]
    }
    pipe.write("second\n")
    await eventually("\"second\" to arrive while the input is still open") {
      received.value == ["first", "second"]
    }
    expectOwnThread(input)
  }

  @Test("A line written in pieces is one line")
  func linesInPieces() async throws {
    let pipe = Pipe()
    let input = ProbedInput(pipe)
    let lines = inputLines(from: input)

    // Each piece is read before the next is written, so the reads split the lines.
    pipe.write("hel")
    _ = await eventually { input.bytesRead == 3 }
    pipe.write("lo\nwor")
    _ = await eventually { input.bytesRead == 9 }
    pipe.write("ld\n")
    try pipe.fileHandleForWriting.close()

    let received = try await readToEnd(lines)
    expectOwnThread(input)
    #expect(
      received == ["hello", "world"],
      Comment(
        rawValue: "a line that came in several reads is one line: keep the bytes until its newline "
          + "arrives"))
  }

  @Test("A character, or a \\r\\n, split between two reads is one whole line")
  func splitCharacters() async throws {
    let cases: [(pieces: [[UInt8]], expected: [String])] = [
      ([Array("caf".utf8) + [0xC3], [0xA9] + Array("\n".utf8)], ["café"]),
      ([Array("1".utf8) + [0xE2], [0x82], [0xAC] + Array(" each\n".utf8)], ["1€ each"]),
      ([Array("hi ".utf8) + [0xF0, 0x9F], [0x91, 0x8B] + Array("\n".utf8)], ["hi 👋"]),
      ([Array("from windows\r".utf8), Array("\nnext\n".utf8)], ["from windows", "next"]),
    ]
    var waiting = true
    for (pieces, expected) in cases {
      let received = try await linesRead(inPieces: pieces, waiting: &waiting)
      #expect(
        received == expected,
        Comment(
          rawValue: "the input \(expected) came in \(pieces.count) reads that cut it between the "
            + "bytes of one character (UTF-8 takes 2 to 4 bytes for one), or between \"\\r\" and "
            + "\"\\n\", and the stream gave \(received): a read ends wherever it likes, so only "
            + "whole lines may be turned into text"))
    }
  }

  @Test("Whatever the split point, the same input gives the same lines")
  func everySplitPoint() async throws {
    let text = "añb\r\n\nc€d\r\ne\rf\nlast"
    let expected = ["añb", "", "c€d", "e\rf", "last"]
    let bytes = Array(text.utf8)
    var waiting = true
    for split in 1..<bytes.count {
      let received = try await linesRead(
        inPieces: [Array(bytes[..<split]), Array(bytes[split...])], waiting: &waiting)
      if received != expected {
        Issue.record(
          Comment(
            rawValue: "the input \(expected.debugDescription), read in two pieces split after "
              + "byte \(split), gave \(received.debugDescription): lines end at \"\\n\" (a "
              + "\"\\r\" before it is dropped, a \"\\r\" elsewhere is text), and the bytes of a "
              + "line must wait until its end has arrived, wherever a read stops"))
        return
      }
    }
  }

  @Test("500 lines written in random pieces all arrive, whole and in order")
  func manyLinesInPieces() async throws {
    let expected = (1...500).map { index in
      index % 7 == 0 ? "" : "línea \(index) " + String(repeating: "€", count: index % 5)
    }
    let bytes = Array(expected.map { $0 + (($0.count % 2) == 0 ? "\r\n" : "\n") }.joined().utf8)
    var generator = SplitMix(seed: 8_4)
    var pieces: [[UInt8]] = []
    var start = 0
    while start < bytes.count {
      let end = min(bytes.count, start + Int(generator.next() % 40) + 1)
      pieces.append(Array(bytes[start..<end]))
      start = end
    }
    let pipe = Pipe()
    let input = ProbedInput(pipe)
    let lines = inputLines(from: input)
    var written = 0
    var waiting = true
    for (index, piece) in pieces.enumerated() {
      pipe.write(bytes: piece)
      written += piece.count
      // Now and then a piece is read before the next comes; in between they pile up. Once
      // one is not read in time, the rest is written without waiting.
      if waiting && index % 10 == 0 {
        waiting = await eventually { input.bytesRead >= written || input.misplacedRead != nil }
      }
    }
    try pipe.fileHandleForWriting.close()
    let received = try await readToEnd(lines)
    expectOwnThread(input)
    let firstWrong = received.indices.first { $0 < expected.count && received[$0] != expected[$0] }
    #expect(
      received == expected,
      Comment(
        rawValue: "500 lines came in \(pieces.count) pieces of 1 to 40 bytes, and the stream gave "
          + "\(received.count) lines"
          + (firstWrong.map {
            ", the first wrong one \(received[$0].debugDescription) where "
              + "\(expected[$0].debugDescription) was written"
          } ?? "")
          + ": every line, whole, in the order written"
          + (received.count < expected.count && !received.isEmpty
            && expected.suffix(received.count).elementsEqual(received)
            ? ". The lines it gave are the last \(received.count) written, in order: the oldest "
              + "were dropped while the loop had not read them yet, as a stream that keeps "
              + "only the newest (bufferingNewest) does"
            : received.count < expected.count && !received.isEmpty
              && expected.prefix(received.count).elementsEqual(received)
              ? ". The lines it gave are the first \(received.count) written: the later ones "
                + "were dropped while the loop had not read the earlier ones yet, as a stream "
                + "that keeps only the oldest (bufferingOldest) does, or the stream ended early"
              : "")))
  }

  @Test("Reading stops at end of input")
  func readingStopsAtEnd() async throws {
    let pipe = Pipe()
    let input = ProbedInput(pipe)
    let lines = inputLines(from: input)
    pipe.write("only line\n")
    try pipe.fileHandleForWriting.close()
    _ = try await readToEnd(lines)
    expectOwnThread(input)

    let reads = input.readCount
    try await Task.sleep(for: .milliseconds(200))
    #expect(
      input.readCount == reads,
      "after the end of input (an empty read) the input was read \(input.readCount - reads) more times in 0.2 seconds: the reading thread must stop there, or it spins for as long as the program runs"
    )
  }

  @Test("Only a \"\\r\" just before \"\\n\" belongs to the line end; other breaks are text")
  func otherLineBreaksAreText() async throws {
    let text =
      "\rleading\ntwo\r\r\n\u{2028}separators\u{2029}\nnext\u{85}\n\u{0B}\u{0C}\nlast\n"
    let expected = [
      "\rleading", "two\r", "\u{2028}separators\u{2029}", "next\u{85}", "\u{0B}\u{0C}", "last",
    ]
    let received = try await linesRead(from: text)
    #expect(
      received == expected,
      Comment(
        rawValue: "the input \(text.debugDescription) gave \(received.debugDescription), not "
          + "\(expected.debugDescription): a line ends at \"\\n\", and only one \"\\r\" right "
          + "before it belongs to that end. Any other \"\\r\" (a leading one, the first of two) "
          + "and other line-break characters (U+0085, U+2028, U+2029, vertical tab, form feed) "
          + "are text the user typed: trimming a whole character set such as .newlines "
          + "removes them too"))
  }
}
