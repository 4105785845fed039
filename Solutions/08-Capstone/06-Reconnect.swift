import ChatKit
import Dispatch
import Foundation
import Synchronization

/// How a chat client tries again after the server went away.
public struct ReconnectPolicy: Sendable {
  /// How many connects to try, after a loss, before giving up.
  public var attempts: Int
  /// The wait before the first try; each failed try doubles it. Every loss starts again
  /// from here.
  public var firstDelay: Duration

  public init(attempts: Int = 5, firstDelay: Duration = .seconds(1)) {
    self.attempts = attempts
    self.firstDelay = firstDelay
  }
}

/// Why a reconnecting chat stopped before its input ended.
public enum ReconnectError: Error, Equatable {
  /// The server stayed away for every attempt the policy allowed.
  case gaveUp
}

// MARK: - The legacy client (the app still ships it; read it, leave it as it is)

/// The chat client the app ships today: it joins, prints what others say, sends what the
/// user types, and when the server goes away it says so and tries again, waiting twice as
/// long after each failed try. A line typed while there is no connection is reported, not
/// sent.
///
/// Its state machine is spread over five callbacks on one queue. Nothing can cancel it as a
/// whole: `stop()` must be called, and a timer armed before it still fires (and checks
/// `stopped`). The waits are real time, so a test of three failed tries waits seven
/// seconds. And nobody can `await` it: giving up is one more callback.
final class LegacyReconnectingChat: ChatConnectionDelegate, @unchecked Sendable {
  // @unchecked: every `var` below belongs to `queue`, which also runs the callbacks.
  private let queue = DispatchQueue(label: "LegacyReconnectingChat")
  private let name: String
  private let port: UInt16
  private let policy: ReconnectPolicy
  private let output: @Sendable (String) -> Void
  private var connection: ChatConnection?
  private var connected = false
  private var stopped = false
  private var failures = 0
  private var delay: Duration
  /// Called on `queue` when the policy's attempts are used up.
  var onGiveUp: (@Sendable () -> Void)?

  init(
    name: String, port: UInt16, policy: ReconnectPolicy,
    output: @escaping @Sendable (String) -> Void
  ) {
    self.name = name
    self.port = port
    self.policy = policy
    self.output = output
    delay = policy.firstDelay
  }

  /// Joins; `completion` gets nil once joined, or the first connect's error.
  func start(completion: @escaping @Sendable (Error?) -> Void) {
    queue.async { self.open(completion) }
  }

  /// Sends `line`, or reports it as not sent.
  func say(_ line: String) {
    queue.async {
      guard self.connected, let connection = self.connection else {
        self.output("! not sent: \(line)")
        return
      }
      connection.send(line) { error in
        if error != nil { self.output("! not sent: \(line)") }
      }
    }
  }

  /// Hangs up, and stops trying.
  func stop() {
    queue.async {
      self.stopped = true
      self.connection?.disconnect()
    }
  }

  func chatConnection(_ connection: ChatConnection, didReceive line: String) {
    output(line)
  }

  func chatConnection(_ connection: ChatConnection, didDisconnectWithError error: Error?) {
    connected = false
    guard error != nil, !stopped else { return }
    output("* connection lost")
    failures = 0
    delay = policy.firstDelay
    retryLater()
  }

  private func open(_ completion: @escaping @Sendable (Error?) -> Void) {
    let connection = ChatConnection(callbackQueue: queue)
    connection.delegate = self  // before connecting: lines come with the welcome
    self.connection = connection
    connection.connect(port: port, name: name) { error in
      self.connected = error == nil
      completion(error)
    }
  }

  private func retryLater() {
    guard failures < policy.attempts else {
      onGiveUp?()
      return
    }
    failures += 1
    let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
    queue.asyncAfter(deadline: .now() + seconds) {
      guard !self.stopped else { return }
      self.open { error in
        if error == nil {
          self.output("* reconnected")
        } else {
          self.delay *= 2
          self.retryLater()
        }
      }
    }
  }
}

// MARK: - The function you write

/// The legacy client's behaviour as one async call: joins the chat as `name`, prints every
/// line the server sends to `output`, and sends every line of `input`.
///
/// When the server goes away it prints `* connection lost`, then tries to connect again:
/// it waits `policy.firstDelay` on `clock`, and twice as long after each failed try; once
/// back it prints `* reconnected` and goes on. A line that cannot be sent (no connection)
/// is reported as `! not sent: LINE`. Returns at the end of the input, after hanging up;
/// throws the first connect's error at once, and ``ReconnectError/gaveUp`` when every try
/// failed. Cancelling it hangs up; no task it starts outlives it.
public func runReconnectingChat(
  name: String, input: AsyncStream<String>, output: @escaping @Sendable (String) -> Void,
  host: String = "127.0.0.1", port: UInt16, policy: ReconnectPolicy = ReconnectPolicy(),
  clock: any Clock<Duration> = ContinuousClock()
) async throws {
  // The first connection is the command's own business: if it fails, there is nothing to
  // get back to, so its error ends the command at once. The stream first, as in 8.5: it
  // sets the delegate, so no line that comes with the welcome is lost.
  let first = ChatConnection()
  let firstLines = first.incomingLines()
  try await first.connect(to: host, port: port, as: name)

  // The connection of the moment, for the input side; nil while there is none.
  let current = CurrentConnection(first)
  try await withThrowingTaskGroup(of: Void.self) { group in
    // The input side lives as long as the command, not as long as a connection: cancelling
    // a task that waits on an AsyncStream ends the stream for good, so a reader per
    // connection would lose the input at the first reconnection.
    group.addTask {
      for await line in input {
        guard let connection = current.connection else {
          output("! not sent: \(line)")
          continue
        }
        do {
          try await connection.send(line)
        } catch {
          // The connection broke under the send, or the line is invalid: either way, say
          // so and go on. Ending the input side here would end the whole chat.
          output("! not sent: \(line)")
        }
      }
      // End of input: returning ends the command (the parent stops the other side).
    }
    // The server side: print what arrives; when the server goes away, reconnect.
    group.addTask {
      var lines = firstLines
      while true {
        do {
          for try await line in lines { output(line) }
          return  // finished without an error: we hung up, or this task was cancelled
        } catch {
          // An error ends the stream: the server closed the connection, or it was reset.
        }
        current.set(nil)
        output("* connection lost")
        // Every loss starts again from the first delay.
        var delay = policy.firstDelay
        var attempt = 0
        while true {
          attempt += 1
          guard attempt <= policy.attempts else { throw ReconnectError.gaveUp }
          // Suspends on the caller's clock instead of blocking in real time; the `try`
          // ends the command's wait when it is cancelled.
          try await Task.sleep(for: delay, clock: clock)
          let connection = ChatConnection()
          let next = connection.incomingLines()  // before connecting, every time
          do {
            try await connection.connect(to: host, port: port, as: name)
            lines = next
            current.set(connection)
            break
          } catch {
            try Task.checkCancellation()  // a cancelled connect is no failed attempt
            delay *= 2  // refused: the server is not back yet
          }
        }
        output("* reconnected")
      }
    }
    // Whichever side ends first decides: the end of input returns here; giving up throws
    // here, and the group cancels the input side before rethrowing. Either way the other
    // side is cancelled and awaited: no task outlives the command.
    try await group.next()
    group.cancelAll()
    current.connection?.disconnect()
  }
}

/// The connection the input side sends on, changed by the server side as it reconnects.
private final class CurrentConnection: Sendable {
  private let state: Mutex<ChatConnection?>

  init(_ connection: ChatConnection) {
    state = Mutex(connection)
  }

  var connection: ChatConnection? { state.withLock { $0 } }

  func set(_ connection: ChatConnection?) {
    state.withLock { $0 = connection }
  }
}
