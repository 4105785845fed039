import Foundation
import Testing
import WorkbookTesting

@testable import ChatKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A chat server on an ephemeral loopback port, already started.
func startedServer() throws -> ChatServer {
  let server = ChatServer(port: 0)
  try server.start()
  return server
}

/// Records what a legacy client's delegate receives.
final class Recorder: ChatConnectionDelegate, @unchecked Sendable {
  let lines = Locked<[String]>([])

  func chatConnection(_ connection: ChatConnection, didReceive line: String) {
    lines.withLock { $0.append(line) }
  }

  func chatConnection(_ connection: ChatConnection, didDisconnectWithError error: Error?) {}
}

/// Another chat member, joined with the legacy API (not with the exercise's code).
struct Member: Sendable {
  let connection: ChatConnection
  let recorder: Recorder

  /// Sends with the legacy API and waits for the completion.
  func say(_ line: String) async throws {
    try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<Void, any Error>) in
      connection.send(line) { error in
        if let error { continuation.resume(throwing: error) } else { continuation.resume() }
      }
    }
  }
}

/// Connects `connection` with the legacy API and waits for the welcome.
func legacyConnect(_ connection: ChatConnection, port: UInt16, name: String) async throws {
  try await withCheckedThrowingContinuation {
    (continuation: CheckedContinuation<Void, any Error>) in
    connection.connect(port: port, name: name) { error in
      if let error { continuation.resume(throwing: error) } else { continuation.resume() }
    }
  }
}

/// Joins `server` as `name` with the legacy API, recording what arrives.
func join(_ server: ChatServer, as name: String) async throws -> Member {
  let member = Member(connection: ChatConnection(), recorder: Recorder())
  member.connection.delegate = member.recorder
  try await legacyConnect(member.connection, port: server.port, name: name)
  return member
}

/// A port on 127.0.0.1 where nothing listens: connecting is refused.
func closedPort() throws -> UInt16 {
  let server = ChatServer(port: 0)
  try server.start()
  let port = server.port
  server.stop()
  return port
}

/// A socket on 127.0.0.1 that listens but never answers: a connect to it waits forever
/// for the welcome.
final class SilentListener: Sendable {
  let fd: Int32
  let port: UInt16

  init() throws {
    fd = try Socket.makeTCP()
    guard Socket.bind(fd, to: Socket.address(host: "127.0.0.1", port: 0)!) == 0,
      listen(fd, 8) == 0
    else {
      let error = SocketError("bind")
      close(fd)
      throw error
    }
    port = try Socket.localPort(fd)
  }

  deinit { close(fd) }
}

extension Pipe {
  /// Writes `text` to the pipe's write end.
  func write(_ text: String) {
    fileHandleForWriting.write(Data(text.utf8))
  }
}
