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
  let pipe = Pipe()
  let input = ProbedInput(pipe)
  let lines = inputLines(from: input)
  if !text.isEmpty { pipe.write(text) }
  try pipe.fileHandleForWriting.close()
  let received = try await readToEnd(lines)
  expectOwnThread(input, sourceLocation: sourceLocation)
  return received
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

@Suite("8.4 Input lines")
struct InputLinesTests {
  @Test("Yields every line without its newline, and finishes at end of input")
  func linesThenEnd() async throws {
    let received = try await linesRead(from: "hello\nsecond line\n\nlast\n")
    #expect(
      received == ["hello", "second line", "", "last"],
      "each line, without its newline: an empty line is a line too")
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
}
