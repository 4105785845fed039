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

@Suite("8.4 Input lines")
struct InputLinesTests {
  @Test("Yields every line without its newline, and finishes at end of input")
  func linesThenEnd() async throws {
    let pipe = Pipe()
    let input = ProbedInput(pipe)
    let lines = inputLines(from: input)

    pipe.write("hello\nsecond line\n\nlast\n")
    try pipe.fileHandleForWriting.close()

    let received = try await withDeadline(
      .seconds(2), "reading inputLines(from:) to its end",
      hint: "the stream never finishes: at end of file (an empty read) call finish()"
    ) {
      await all(lines)
    }
    expectOwnThread(input)
    #expect(
      received == ["hello", "second line", "", "last"],
      "each line, without its newline: an empty line is a line too")
  }

  @Test("A last line without a newline still counts")
  func unfinishedLastLine() async throws {
    let pipe = Pipe()
    let input = ProbedInput(pipe)
    let lines = inputLines(from: input)

    pipe.write("first\nno newline")
    try pipe.fileHandleForWriting.close()

    let received = try await withDeadline(
      .seconds(2), "reading inputLines(from:) to its end",
      hint: "the stream never finishes: at end of file (an empty read) call finish()"
    ) {
      await all(lines)
    }
    expectOwnThread(input)
    #expect(
      received == ["first", "no newline"],
      Comment(
        rawValue:
          "the input ended in the middle of a line: at end of file, yield what is left, then "
          + "finish"))
  }

  @Test("\\r\\n line endings lose the \\r")
  func windowsLineEndings() async throws {
    let pipe = Pipe()
    let input = ProbedInput(pipe)
    let lines = inputLines(from: input)

    pipe.write("from windows\r\nand more\r\n")
    try pipe.fileHandleForWriting.close()

    let received = try await withDeadline(
      .seconds(2), "reading inputLines(from:) to its end",
      hint: "the stream never finishes: at end of file (an empty read) call finish()"
    ) {
      await all(lines)
    }
    expectOwnThread(input)
    #expect(
      received == ["from windows", "and more"],
      "a line ending \"\\r\\n\" must lose its \"\\r\" too")
  }

  @Test("Empty input finishes at once")
  func emptyInput() async throws {
    let pipe = Pipe()
    let input = ProbedInput(pipe)
    let lines = inputLines(from: input)
    try pipe.fileHandleForWriting.close()

    let received = try await withDeadline(
      .seconds(2), "reading inputLines(from:) to its end",
      hint: "the stream never finishes: at end of file (an empty read) call finish()"
    ) {
      await all(lines)
    }
    expectOwnThread(input)
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

    let received = try await withDeadline(
      .seconds(2), "reading inputLines(from:) to its end",
      hint: "the stream never finishes: at end of file (an empty read) call finish()"
    ) {
      await all(lines)
    }
    expectOwnThread(input)
    #expect(
      received == ["hello", "world"],
      Comment(
        rawValue: "a line that came in several reads is one line: keep the bytes until its newline "
          + "arrives"))
  }
}
