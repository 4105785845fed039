import Foundation
import Testing
import WorkbookTesting

@testable import ChatKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A chat server on an ephemeral loopback port, already started. `greeting`: lines each
/// client gets right after its welcome, read together with it (see `ChatServer.init`).
func startedServer(greeting: [String] = []) throws -> ChatServer {
  let server = ChatServer(port: 0, greeting: greeting)
  try server.start()
  return server
}

/// Returns once every callback `connection` had queued before this call has run: a legacy
/// send's completion comes on the same serial callback queue, after them (it fails with
/// `.notConnected` when the connection is not established, which is fine here).
func callbacksDelivered(_ connection: ChatConnection) async {
  await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
    connection.send("") { _ in continuation.resume() }
  }
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
final class SilentListener: @unchecked Sendable {
  // @unchecked: `peer` is only touched under `lock`.
  let fd: Int32
  let port: UInt16
  private let lock = NSLock()
  private var peer: Int32 = -1

  init() throws {
    fd = try Socket.makeTCP()  // non-blocking, so accept never waits
    guard Socket.bind(fd, to: Socket.address(host: "127.0.0.1", port: 0)!) == 0,
      listen(fd, 8) == 0
    else {
      let error = SocketError("bind")
      close(fd)
      throw error
    }
    port = try Socket.localPort(fd)
  }

  deinit {
    // The accepted connection stays open on purpose: closing it would end a connect that
    // was never cancelled with `.closedByServer` after the test, and a continuation that
    // onCancel already resumed would then be resumed a second time, a crash that would hide
    // the test's own message ("call disconnect() in onCancel").
    close(fd)
  }

  /// Whether the client that connected here has closed its end (read gives end of file).
  /// Never waits: poll it with `eventually`.
  func peerHungUp() -> Bool {
    lock.withLock {
      if peer < 0 {
        peer = accept(fd, nil, nil)
        guard peer >= 0 else { return false }
        try? Socket.setNonBlocking(peer)
      }
      var buffer = [UInt8](repeating: 0, count: 256)
      while true {
        let count = buffer.withUnsafeMutableBytes { read(peer, $0.baseAddress, $0.count) }
        if count > 0 { continue }  // the name it sent
        return count == 0 || !Socket.wouldBlock(errno)
      }
    }
  }
}

/// A `FileHandle` that notes where `availableData` is called from: tests hand it to
/// `inputLines(from:)` to see whether the blocking reads run on a thread of their own.
final class ProbedInput: FileHandle, @unchecked Sendable {
  // @unchecked: the state is a `Locked`.
  private let misplaced = Locked<String?>(nil)

  /// The read end of `pipe`, probed: a descriptor of its own (a `dup`), closed with it, so
  /// a reader that outlives the test never reads a closed descriptor.
  init(_ pipe: Pipe) {
    super.init(fileDescriptor: dup(pipe.fileHandleForReading.fileDescriptor), closeOnDealloc: true)
  }

  override var availableData: Data {
    if let place = Self.sharedThreadKind() {
      misplaced.withLock { $0 = $0 ?? place }
      // Not blocking that thread: on a machine with few cores the blocked reads of a few
      // tests would stop every task, and the test that says why with them. An empty read
      // is the end of the input, so the reading loop ends and gives the thread back.
      return Data()
    }
    let data = super.availableData
    bytes.withLock { $0 += data.count }
    return data
  }

  private let bytes = Locked(0)

  /// How many bytes `availableData` has returned so far.
  var bytesRead: Int { bytes.value }

  /// What the learner did wrong if a blocking read ran on a shared thread; nil if none did.
  var misplacedRead: String? {
    guard let place = misplaced.value else { return nil }
    return "inputLines(from:) read its input (availableData) \(place) instead of suspending, "
      + "holding one of the few threads that all tasks share for as long as the user does "
      + "not type. Read on a Thread of your own: Thread { … }.start()"
  }

  /// Where the caller runs, if it is a shared thread that must not block; nil on a thread
  /// of its own.
  private static func sharedThreadKind() -> String? {
    if withUnsafeCurrentTask(body: { $0 != nil }) {
      return "inside a Task, so it blocked a concurrency thread"
    }
    #if os(Linux)
    // Dispatch names its global queues' worker threads after the queue,
    // "com.apple.root.default-qos" (the kernel keeps the last 15 characters); serial
    // queues of your own run on ".overcommit" threads, which may block. A `Thread` started
    // from such a worker inherits its name, but is executing as far as Foundation knows.
    let thread = Thread.current
    if !thread.isExecuting, let name = thread.name, name.hasSuffix("-qos") {
      return "on a global Dispatch queue, so it blocked one of its worker threads"
    }
    #endif
    return nil
  }
}

extension Pipe {
  /// Writes `text` to the pipe's write end.
  func write(_ text: String) {
    fileHandleForWriting.write(Data(text.utf8))
  }
}
