// Chapter 5, "The idea": the part of CoFuture the chapter uses. CoFuture conforms to this
// protocol, so the compiler checks each line against the real CoroutineKit.
import CoroutineKit

// listing: api
protocol FutureEssentials<Value> {
  associatedtype Value
  var result: Result<Value, Error>? { get }  // nil until it completes
  func await() throws -> Value  // blocks; coroutines only
  func await(timeout: Duration) throws -> Value  // gives up with .timeout
  func whenComplete(_ callback: @escaping (Result<Value, Error>) -> Void)
  func cancel()  // fails it with .cancelled
}

extension CoFuture: FutureEssentials {}
// listing: end
