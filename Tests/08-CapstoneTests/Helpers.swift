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

  /// Listens on `port`, or on one the kernel picks (0). A port that a stopped server used
  /// can be taken again at once. A `receiveBuffer` in bytes caps what the kernel takes in
  /// for the client, which this listener never reads: the client's writes soon block.
  init(port requested: UInt16 = 0, receiveBuffer: Int32? = nil) throws {
    fd = try Socket.makeTCP()  // non-blocking, so accept never waits
    var on: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
    if var size = receiveBuffer {  // Set before listen: the accepted socket inherits it.
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    guard Socket.bind(fd, to: Socket.address(host: "127.0.0.1", port: requested)!) == 0,
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

  /// Whether a client has connected here. Never waits: poll it with `eventually`.
  func peerConnected() -> Bool {
    lock.withLock { acceptPeer() }
  }

  /// Writes `text` to the client that connected here, if one did; says whether it did. For
  /// a short text: a welcome, say.
  func say(_ text: String) -> Bool {
    lock.withLock {
      guard acceptPeer() else { return false }
      let bytes = Array(text.utf8)
      return bytes.withUnsafeBytes { write(peer, $0.baseAddress, $0.count) } == bytes.count
    }
  }

  /// Whether the client that connected here, in this process, no longer holds its socket:
  /// no descriptor of the process is that connection's end any more, so whatever it had
  /// not yet handed to the kernel is gone.
  func clientLetGo() -> Bool {
    lock.withLock {
      guard acceptPeer() else { return false }
      guard let clientPort = Self.port(of: peer, remote: true) else { return true }
      for descriptor in Int32(0)..<4_096 where descriptor != peer && descriptor != fd {
        if Self.port(of: descriptor, remote: false) == clientPort
          && Self.port(of: descriptor, remote: true) == port
        {
          return false
        }
      }
      return true
    }
  }

  /// The local or remote port of a TCP socket, or nil if `descriptor` is not one.
  private static func port(of descriptor: Int32, remote: Bool) -> UInt16? {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        remote ? getpeername(descriptor, $0, &length) : getsockname(descriptor, $0, &length)
      }
    }
    guard named == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
    return UInt16(bigEndian: address.sin_port)
  }

  /// Reads what the client sent since the last call, without waiting; `hungUp` once it
  /// has closed its end and everything before that was read.
  func drain() -> (bytes: [UInt8], hungUp: Bool) {
    lock.withLock {
      guard acceptPeer() else { return ([], false) }
      var bytes: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 64 * 1024)
      while true {
        let count = buffer.withUnsafeMutableBytes { read(peer, $0.baseAddress, $0.count) }
        if count > 0 {
          bytes += buffer[..<count]
        } else if count < 0 && errno == EINTR {
          continue
        } else {
          return (bytes, count == 0 || !Socket.wouldBlock(errno))
        }
      }
    }
  }

  /// Whether the client that connected here has closed its end (read gives end of file).
  /// Never waits: poll it with `eventually`.
  func peerHungUp() -> Bool {
    drain().hungUp  // What it read (the name it sent) does not matter here.
  }

  /// Takes the waiting client, if there is one and none was taken before; says whether
  /// there is one. Call it under `lock`.
  private func acceptPeer() -> Bool {
    if peer < 0 {
      peer = accept(fd, nil, nil)
      guard peer >= 0 else { return false }
      try? Socket.setNonBlocking(peer)
    }
    return true
  }
}

/// A connection's callbacks, delivered late when a test says so: for a server that is slow
/// to answer. Each callback waits `delay` (as set when it was scheduled) on a serial queue of
/// its own, then runs; they run one at a time, in order.
final class SlowCallbacks: Sendable {
  private let queue = DispatchQueue(label: "SlowCallbacks")
  /// How late each callback scheduled from now on runs; zero at first.
  let delay = Locked(Duration.zero)

  func schedule(_ work: @escaping @Sendable () -> Void) {
    let (seconds, attoseconds) = delay.value.components
    let wait = Double(seconds) + Double(attoseconds) / 1e18
    queue.async {
      if wait > 0 { Thread.sleep(forTimeInterval: wait) }
      work()
    }
  }
}

/// A connection's callbacks, run on `executor`'s one thread behind whatever runs there (as
/// on the main queue), each `late` after it was scheduled (as set at that moment), in order.
func callbacks(
  on executor: OneThreadExecutor, late: Locked<Duration>
) -> @Sendable (@escaping @Sendable () -> Void) -> Void {
  let queue = DispatchQueue(label: "late callbacks")
  return { work in
    let delay = late.value
    queue.async {
      if delay > .zero { Thread.sleep(forTimeInterval: delay.timeInterval) }
      executor.schedule(work)
    }
  }
}

/// How late a callback comes in the tests that check a bridge does not poll for it: long
/// enough that a loop looking every few milliseconds looks many times even on a machine so
/// busy that each of its sleeps ends far too late.
let pollingWindow = Duration.milliseconds(1500)

/// Records a failure when `operation`, run on `executor` while its callback came
/// ``pollingWindow`` late, ran more steps there than one wait needs: one before it
/// suspends, one once resumed, and the deadline's own. A loop that looks whether the
/// callback came (around `Task.sleep`) runs a step per look.
func expectNoPolling(
  _ executor: OneThreadExecutor, stepsBefore: Int, _ operation: String, waitingFor what: String,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  let steps = executor.jobsRun - stepsBefore
  #expect(
    steps <= 4,
    Comment(
      rawValue: "\(operation) polled instead of suspending: it ran \(steps) separate steps on "
        + "its thread while it waited for \(what) that came 1.5 seconds late (a loop around "
        + "Task.sleep that looks whether it came?): each look wakes the thread, and the answer "
        + "waits for the next look"),
    sourceLocation: sourceLocation)
}

/// How long ``SlowCallbacks`` holds a callback in the tests that check a bridge waits
/// without holding a thread: longer than the 1.5 seconds in which `withDeadline` notices a
/// blocked thread of the concurrency pool, with room for a busy machine.
let slowAnswer = Duration.milliseconds(2500)

/// A connection's callbacks, held back until the test lets them go, then delivered all at
/// once, in order, on one thread: many events in a burst, with nothing in between.
final class HeldCallbacks: Sendable {
  private let queue = DispatchQueue(label: "HeldCallbacks")
  private struct State {
    var holding = true
    var held: [@Sendable () -> Void] = []
  }
  private let state = Locked(State())

  /// How many callbacks are waiting.
  var heldCount: Int { state.value.held.count }

  func schedule(_ work: @escaping @Sendable () -> Void) {
    let run = state.withLock { state -> Bool in
      if state.holding { state.held.append(work) }
      return !state.holding
    }
    if run { queue.async(execute: work) }
  }

  /// Runs every held callback, back to back, while every thread of the concurrency pool is
  /// kept busy, so that no task runs until the last of them has returned; from then on each
  /// callback runs as it comes. Returns once they have run. Only inside `withoutPoolCheck`.
  func releaseWhileThePoolIsHeld() async {
    let held = takeHeld()
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      queue.async {
        let hold = PoolHold()
        for work in held { work() }
        hold.end()
        done.resume()
      }
    }
  }

  /// Holds the callbacks scheduled from now on, until the next release.
  func holdAgain() {
    state.withLock { $0.holding = true }
  }

  /// Runs every held callback, back to back, on the callbacks' thread; from then on each
  /// callback runs as it comes. Returns once they have run.
  func release() async {
    let held = takeHeld()
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      queue.async {
        for work in held { work() }
        done.resume()
      }
    }
  }

  /// Takes the held callbacks without running them, for a test to run where and when it
  /// likes; from then on each callback runs as it comes.
  func takeHeld() -> [@Sendable () -> Void] {
    state.withLock { state in
      state.holding = false
      defer { state.held = [] }
      return state.held
    }
  }
}

/// Every thread of Swift's concurrency pool, held by a task that waits on a semaphore, until
/// ``end()``: meanwhile no task runs. Only from a thread outside the pool, and only inside
/// `withoutPoolCheck`, whose own squeeze would otherwise see a blocked pool.
final class PoolHold: Sendable {
  private let started = DispatchSemaphore(value: 0)
  private let done = DispatchSemaphore(value: 0)
  private let left = DispatchSemaphore(value: 0)
  /// The pool has one thread per active core.
  private let width = ProcessInfo.processInfo.activeProcessorCount

  /// Returns once every thread is held, or after a second (a thread busy elsewhere is
  /// taken when it is free).
  init() {
    for _ in 0..<width {
      Task.detached { [started, done, left] in
        started.signal()
        done.wait()
        left.signal()
      }
    }
    let deadline = DispatchTime.now() + 1
    for _ in 0..<width { _ = started.wait(timeout: deadline) }
  }

  /// Lets every thread go, and returns once they have gone (or after two seconds): a test
  /// that checks the pool as soon as this one ends must find its threads free, not still
  /// waking up.
  func end() {
    for _ in 0..<width { done.signal() }
    let deadline = DispatchTime.now() + 2
    for _ in 0..<width { _ = left.wait(timeout: deadline) }
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
    // A read that blocks a thread of the pool through another method than availableData
    // (readData(ofLength:), say) cannot be probed: if it holds the whole pool, ending the
    // input lets it return, so the tests can go on and say what blocked.
    let writer = UncheckedPipe(pipe)
    PoolRelief.register { try? writer.pipe.fileHandleForWriting.close() }
  }

  override var availableData: Data {
    started.withLock { $0 += 1 }
    if let place = Self.sharedThreadKind() {
      misplaced.withLock { $0 = $0 ?? place }
      // Not blocking that thread: on a machine with few cores the blocked reads of a few
      // tests would stop every task, and the test that says why with them. An empty read
      // is the end of the input, so the reading loop ends and gives the thread back.
      return Data()
    }
    let data = super.availableData
    bytes.withLock { $0 += data.count }
    reads.withLock { $0 += 1 }
    return data
  }

  private let bytes = Locked(0)
  private let reads = Locked(0)
  private let started = Locked(0)

  /// How many times `availableData` has been called, returned or not.
  var readsStarted: Int { started.value }

  /// How many times `availableData` has returned (an empty read at end of file too).
  var readCount: Int { reads.value }

  /// How many bytes `availableData` has returned so far.
  var bytesRead: Int { bytes.value }

  /// Where a blocking read ran on a shared thread, as in "inside a Task, so it blocked a
  /// concurrency thread"; nil if none did.
  var misplacedPlace: String? { misplaced.value }

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
  /// Writes `text` to the pipe's write end. (Nothing, if the write end was closed because
  /// the pool was found blocked: see `PoolRelief`.)
  func write(_ text: String) {
    try? fileHandleForWriting.write(contentsOf: Data(text.utf8))
  }

  /// Writes `bytes` to the pipe's write end, as they are (a part of a character too).
  func write(bytes: some Sequence<UInt8>) {
    try? fileHandleForWriting.write(contentsOf: Data(bytes))
  }
}

extension Result where Failure == any Error {
  /// The error, if it is a failure.
  var failure: (any Error)? {
    if case .failure(let error) = self { error } else { nil }
  }

  /// What the call did, for a message: "returned", or "threw ERROR".
  var described: String {
    switch self {
    case .success: "returned"
    case .failure(let error): "threw \(error)"
    }
  }
}

/// A small random number generator with a fixed seed, so that a test that cuts its input at
/// random cuts it the same way every run.
struct SplitMix: RandomNumberGenerator {
  private var state: UInt64

  init(seed: UInt64) { state = seed }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var value = state
    value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
    value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
    return value ^ (value >> 31)
  }
}

/// A pipe handed to another thread: closing its write end is safe from any thread.
private struct UncheckedPipe: @unchecked Sendable {
  let pipe: Pipe
  init(_ pipe: Pipe) { self.pipe = pipe }
}
