// Chapter 2, exercise 2.3: a helper that returns a Result, one return per path, so the
// delegate method that calls it resumes exactly once.
import Foundation

struct ServerReply: Sendable {
  var body: Data?
  var error: (any Error)?
}

struct Receipt: Sendable {
  var total: String

  init?(_ body: Data) {
    guard let text = String(data: body, encoding: .utf8), text.hasPrefix("TOTAL ") else {
      return nil
    }
    total = String(text.dropFirst(6))
  }
}

enum ReceiptError: Error {
  case empty
  case unreadable
}

// listing: outcome
func outcome(_ reply: ServerReply) -> Result<Receipt, any Error> {
  if let error = reply.error { return .failure(error) }
  guard let body = reply.body else { return .failure(ReceiptError.empty) }
  guard let receipt = Receipt(body) else { return .failure(ReceiptError.unreadable) }
  return .success(receipt)
}
// listing: end
