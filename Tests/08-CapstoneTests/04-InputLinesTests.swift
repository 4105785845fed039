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

@Suite("8.4 Input lines")
struct InputLinesTests {
  @Test("Yields every line without its newline, and finishes at end of input")
  func linesThenEnd() async throws {
    let pipe = Pipe()
    let lines = inputLines(from: pipe.fileHandleForReading)

    pipe.write("hello\nsecond line\n\nlast\n")
    try pipe.fileHandleForWriting.close()

    let received = try await withDeadline(
      .seconds(2), "reading inputLines(from:) to its end",
      hint: "the stream never finishes: at end of file (an empty read) call finish()"
    ) {
      await all(lines)
    }
    #expect(received == ["hello", "second line", "", "last"])
  }

  @Test("A last line without a newline still counts, and \\r\\n endings lose the \\r")
  func unfinishedLastLine() async throws {
    let pipe = Pipe()
    let lines = inputLines(from: pipe.fileHandleForReading)

    pipe.write("from windows\r\nno newline")
    try pipe.fileHandleForWriting.close()

    let received = try await withDeadline(
      .seconds(2), "reading inputLines(from:) to its end",
      hint: "the stream never finishes: at end of file (an empty read) call finish()"
    ) {
      await all(lines)
    }
    #expect(received == ["from windows", "no newline"])
  }

  @Test("Empty input finishes at once")
  func emptyInput() async throws {
    let pipe = Pipe()
    let lines = inputLines(from: pipe.fileHandleForReading)
    try pipe.fileHandleForWriting.close()

    let received = try await withDeadline(
      .seconds(2), "reading inputLines(from:) to its end",
      hint: "the stream never finishes: at end of file (an empty read) call finish()"
    ) {
      await all(lines)
    }
    #expect(received.isEmpty)
  }

  @Test("Each line arrives as soon as it is typed, long before the end of input")
  func linesArriveWhileInputIsOpen() async throws {
    let pipe = Pipe()
    defer { try? pipe.fileHandleForWriting.close() }
    let lines = inputLines(from: pipe.fileHandleForReading)
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
  }

  @Test("A line written in pieces is one line")
  func linesInPieces() async throws {
    let pipe = Pipe()
    let lines = inputLines(from: pipe.fileHandleForReading)

    pipe.write("hel")
    try await Task.sleep(for: .milliseconds(50))
    pipe.write("lo\nwor")
    try await Task.sleep(for: .milliseconds(50))
    pipe.write("ld\n")
    try pipe.fileHandleForWriting.close()

    let received = try await withDeadline(
      .seconds(2), "reading inputLines(from:) to its end",
      hint: "the stream never finishes: at end of file (an empty read) call finish()"
    ) {
      await all(lines)
    }
    #expect(received == ["hello", "world"])
  }
}
