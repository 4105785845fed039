import LegacyKit

/// Thrown when the encoder calls back with neither an encoded address nor an error.
struct EmptyEncoderReply: Error, Equatable {}

/// Returns the encoded form of `address`; see the exercise for the four cases.
func encode(
  _ address: String,
  using encoder: AddressEncoder,
  reportWarning: @escaping @Sendable (any Error) -> Void
) async throws -> String {
  try await withCheckedThrowingContinuation { continuation in
    encoder.encode(address) { encoded, error in
      guard let encoded else {
        continuation.resume(throwing: error ?? EmptyEncoderReply())
        return
      }
      if let error {
        reportWarning(error)
      }
      continuation.resume(returning: encoded)
    }
  }
}
