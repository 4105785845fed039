import Foundation

/// A greeting service written before Swift Concurrency: ask for a greeting and it arrives
/// later, in a completion handler.
///
/// The greeter is thread-safe and serves any number of requests. Its script decides when,
/// on which thread and how many times the handler runs.
public final class Greeter: @unchecked Sendable {
  private let script: CallbackScript
  private let lock = NSLock()
  private var requests = 0
  private var asked: [String] = []

  public init(script: CallbackScript = .default) {
    self.script = script
  }

  /// How many greetings have been asked for so far.
  public var requestCount: Int {
    lock.lock()
    defer { lock.unlock() }
    return requests
  }

  /// The names asked for so far, in order, exactly as they were passed.
  public var namesAsked: [String] {
    lock.lock()
    defer { lock.unlock() }
    return asked
  }

  /// Makes a greeting for `name` and passes it to `completion`, as the script says.
  public func greet(_ name: String, completion: @escaping (String) -> Void) {
    lock.lock()
    requests += 1
    asked.append(name)
    lock.unlock()
    let greeting = "Hello, \(name)!"
    script.deliver { completion(greeting) }
  }
}
