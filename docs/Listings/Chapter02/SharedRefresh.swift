// Chapter 2, exercise 2.5: the "share one result" policy. Callers that arrive while a
// refresh runs wait for it; the first one starts it.
import LegacyKit
import Synchronization

protocol SessionDelegate: AnyObject {
  func session(_ session: Session, didRefresh token: String)
  func session(_ session: Session, didFailWith error: any Error)
}

/// A made-up legacy session with one refresh at a time and a weak delegate.
final class Session: @unchecked Sendable {
  weak var delegate: SessionDelegate?

  func refreshToken() {
    CallbackScript.default.deliver { [weak self] in
      guard let self else { return }
      self.delegate?.session(self, didRefresh: "token-2")
    }
  }
}

final class SharedRefresh: SessionDelegate, Sendable {
  private let session: Session
  private let waiting = Mutex<[CheckedContinuation<String, any Error>]>([])

  init(session: Session) {
    self.session = session
    session.delegate = self
  }

  func token() async throws -> String {
    try await withCheckedThrowingContinuation { continuation in
      // listing: join
      let isFirst = waiting.withLock { callers in
        callers.append(continuation)
        return callers.count == 1
      }
      if isFirst { session.refreshToken() }  // after the lock, and only once per refresh
      // listing: end
    }
  }

  func session(_ session: Session, didRefresh token: String) {
    // listing: answer-all
    let callers = waiting.withLock { callers in
      defer { callers = [] }
      return callers
    }
    for caller in callers { caller.resume(returning: token) }
    // listing: end
  }

  func session(_ session: Session, didFailWith error: any Error) {
    let callers = waiting.withLock { callers in
      defer { callers = [] }
      return callers
    }
    for caller in callers { caller.resume(throwing: error) }
  }
}
