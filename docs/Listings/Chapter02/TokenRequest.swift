// Chapter 2, "Who keeps the delegate alive?": the helper delegate's own async method does
// the waiting, so the call keeps it alive.
import LegacyKit
import Synchronization

struct Token: Sendable { var value: String }

protocol TokenServiceDelegate: AnyObject {
  func tokenService(_ service: TokenService, didIssue token: Token)
  func tokenService(_ service: TokenService, didFailWith error: any Error)
}

/// A legacy service that holds its delegate weakly, as UIKit-style APIs do.
final class TokenService: @unchecked Sendable {
  weak var delegate: TokenServiceDelegate?

  func requestToken() {
    CallbackScript.default.deliver { [weak self] in
      guard let self else { return }
      self.delegate?.tokenService(self, didIssue: Token(value: "t-1"))
    }
  }
}

final class TokenRequest: TokenServiceDelegate, Sendable {
  private let service: TokenService
  private let waiting = Mutex<CheckedContinuation<Token, any Error>?>(nil)

  init(service: TokenService) {
    self.service = service
  }

  func run() async throws -> Token {
    try await withCheckedThrowingContinuation { continuation in
      waiting.withLock { $0 = continuation }
      service.delegate = self
      service.requestToken()
    }
  }

  func tokenService(_ service: TokenService, didIssue token: Token) {
    waiting.withLock { $0.take() }?.resume(returning: token)
  }

  func tokenService(_ service: TokenService, didFailWith error: any Error) {
    waiting.withLock { $0.take() }?.resume(throwing: error)
  }
}

// listing: fetch-token
func fetchToken(from service: TokenService) async throws -> Token {
  let request = TokenRequest(service: service)  // the service's (weak) delegate
  return try await request.run()
}
// listing: end
