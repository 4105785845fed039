import ChatKit
import Foundation

/// Why the clipper command stopped before its input ended.
public enum ClipperError: Error, Equatable {
  /// The server went away.
  case serverGone
}

/// The `clipper NAME` command: joins the chat as `name`, prints every line the server
/// sends to `output`, and sends every line read from `input`.
///
/// Returns at the end of the input, after hanging up. Throws when the connection cannot
/// be made, or ``ClipperError/serverGone`` when the server goes away first. No task it
/// starts outlives it.
public func runClipper(
  name: String, input: FileHandle, output: @escaping @Sendable (String) -> Void,
  host: String = "127.0.0.1", port: UInt16
) async throws {
  let connection = ChatConnection()
  // The stream first: it sets the delegate, so no line after the welcome is lost.
  let incoming = connection.incomingLines()
  try await connection.connect(to: host, port: port, as: name)

  // The incoming side throws when the server goes away; the input side returns at the end
  // of input. Whichever ends first decides: a throw leaves the group with the error.
  try await withThrowingTaskGroup(of: Void.self) { group in
    defer { connection.disconnect() }
    group.addTask {
      do {
        for try await line in incoming { output(line) }
      } catch {
        throw ClipperError.serverGone
      }
      throw ClipperError.serverGone
    }
    group.addTask {
      for await line in inputLines(from: input) {
        do {
          try await connection.send(line)
        } catch ChatConnectionError.invalidLine {
          output("! not sent: a line is at most \(ChatServer.maximumLineLength) bytes")
        } catch {
          throw ClipperError.serverGone
        }
      }
    }
    try await group.next()
    group.cancelAll()
  }
}
