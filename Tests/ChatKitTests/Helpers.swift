import Dispatch
import Testing
import WorkbookTesting

@testable import ChatKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How long any one step may take. Generous, because the machine may be busy; the server
/// needs milliseconds.
let limit = Duration.seconds(5)

/// A server on an ephemeral loopback port, already started.
func startedServer() throws -> ChatServer {
  let server = ChatServer(port: 0)
  try server.start()
  return server
}

/// Records what a connection's delegate receives.
final class Recorder: ChatConnectionDelegate, @unchecked Sendable {
  let lines = Locked<[String]>([])
  /// How many of `lines` are messages; cheap to poll.
  let messageCount = Locked(0)
  /// One entry per `didDisconnectWithError`: nil for a plain disconnect.
  let ends = Locked<[ChatConnectionError?]>([])

  func chatConnection(_ connection: ChatConnection, didReceive line: String) {
    lines.withLock { $0.append(line) }
    if !line.hasPrefix("* ") && !line.hasPrefix("! ") { messageCount.withLock { $0 += 1 } }
  }

  func chatConnection(_ connection: ChatConnection, didDisconnectWithError error: Error?) {
    ends.withLock { $0.append(error.map { $0 as! ChatConnectionError }) }
  }

  /// The lines that are messages (`NAME: text`), not notices.
  var messages: [String] { lines.value.filter { !$0.hasPrefix("* ") && !$0.hasPrefix("! ") } }
}

/// A joined client: the connection and what its delegate has received.
struct Member: Sendable {
  let name: String
  let connection: ChatConnection
  let recorder: Recorder

  func send(_ line: String) async throws {
    try await withDeadline(limit, "send(\(line.prefix(20)))") { [connection] in
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        connection.send(line) { error in
          if let error { continuation.resume(throwing: error) } else { continuation.resume() }
        }
      }
    }
  }

  /// Waits until `line` has arrived.
  func expectToReceive(
    _ line: String, sourceLocation: SourceLocation = #_sourceLocation
  ) async {
    await eventually(
      "\(name) to receive \"\(line)\"", within: limit, sourceLocation: sourceLocation
    ) {
      recorder.lines.value.contains(line)
    }
  }
}

/// Connects with the legacy API, and waits for the welcome (or the error).
func connect(_ connection: ChatConnection, port: UInt16, name: String) async throws {
  try await withDeadline(limit, "connect(\(name))") {
    try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<Void, any Error>) in
      connection.connect(port: port, name: name) { error in
        if let error { continuation.resume(throwing: error) } else { continuation.resume() }
      }
    }
  }
}

/// Connects and joins as `name`.
func join(_ server: ChatServer, as name: String) async throws -> Member {
  let member = Member(name: name, connection: ChatConnection(), recorder: Recorder())
  member.connection.delegate = member.recorder
  try await connect(member.connection, port: server.port, name: name)
  return member
}

/// A bare socket, for what the legacy client will not do: half lines, over-long lines,
/// vanishing without a word.
final class RawClient {
  private(set) var fd: Int32
  private var splitter = LineSplitter(limit: 1 << 20)
  private(set) var lines: [String] = []

  init(port: UInt16) throws {
    fd = try Socket.makeTCP()
    if Socket.connect(fd, to: Socket.address(host: "127.0.0.1", port: port)!) != 0 {
      guard errno == EINPROGRESS else { throw SocketError("connect") }
      try waitUntilWritable()
      let code = Socket.pendingError(fd)
      guard code == 0 else { throw SocketError("connect", code: code) }
    }
  }

  deinit { if fd >= 0 { close(fd) } }

  private func waitUntilWritable() throws {
    var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
    guard poll(&entry, 1, 5000) == 1 else { throw SocketError("poll", code: ETIMEDOUT) }
  }

  /// Sends `text` exactly as given (add the "\n" yourself).
  func send(_ text: String) throws {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      let count = bytes.withUnsafeBytes { Socket.send(fd, .init(rebasing: $0[offset...])) }
      if count > 0 {
        offset += count
      } else if count < 0 && Socket.wouldBlock(errno) {
        try waitUntilWritable()
      } else {
        throw SocketError("send")
      }
    }
  }

  /// Reads what has arrived into `lines`; returns false once the server has closed.
  @discardableResult
  func receive() -> Bool {
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count < 0 && Socket.wouldBlock(errno) { return true }
      guard count > 0 else { return false }
      for case .line(let line) in buffer.withUnsafeBytes({
        splitter.feed(.init(rebasing: $0[..<count]))
      }) {
        lines.append(line)
      }
    }
  }

  /// Vanishes: closes with a reset instead of an orderly end, like a crashed process.
  func reset() {
    var option = linger(l_onoff: 1, l_linger: 0)
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    close(fd)
    fd = -1
  }
}

/// A socket that listens on 127.0.0.1 but never accepts or answers: connects complete
/// (the kernel does the handshake) and then wait forever for the welcome.
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
