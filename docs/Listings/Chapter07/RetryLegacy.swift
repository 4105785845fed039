// Chapter 7, exercise 7.4: a coroutine that blocks its thread between attempts.
import CoroutineKit

func legacyRetrying<Value>(
  attempts: Int, firstDelay: Duration, _ fetch: () -> CoFuture<Value>
) throws -> Value {
  var wait = firstDelay
  var attempt = 1
  while true {
    // listing: blocking
    do { return try fetch().await() } catch {
      guard attempt < attempts else { throw error }
      Coroutine.delay(wait)
      wait *= 2
    }
    // listing: end
    attempt += 1
  }
}
